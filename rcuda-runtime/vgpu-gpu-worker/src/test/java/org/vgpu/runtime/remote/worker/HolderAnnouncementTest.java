package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.apache.commons.cli.ParseException;
import org.junit.jupiter.api.Test;

import org.vgpu.common.error.NetworkException;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.CertificatePin;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.common.security.TokenVerifier;

/** A holder's worker telling the tracker where it listens, with a proof the tracker can check with the site key. */
class HolderAnnouncementTest {
    private static final CertificatePin PIN = CertificatePin.ofDigest(new byte[CertificatePin.BYTES]);

    @Test
    void theTrackerGetsTheEndpointIdAndAProofForExactlyThatLend() throws Exception {
        List<String> requests = new ArrayList<>();
        try (ThrowawaySiteKey key = ThrowawaySiteKey.create("holder-announcement");
                LineServer tracker = fakeTracker(requests, "ok")) {
            HolderAnnouncement.parse(tracker.endpoint().toString(), "42:1")
                    .tell(
                            new Endpoint("10.0.0.2", 7501),
                            "n2-holder-43",
                            Optional.of(PIN),
                            SiteKey.load(key.keyFile()));

            String[] words = requests.getFirst().split(" ");
            assertEquals(
                    List.of("worker", "42", "1", "10.0.0.2:7501", "n2-holder-43"),
                    List.of(words).subList(0, 5));
            var proof = new TokenVerifier(SiteKey.load(key.keyFile()), "n2-holder-43", Clock.systemUTC())
                    .verify(words[5], 1);
            assertEquals("42", proof.jobId());
            assertEquals(Optional.of(PIN), proof.workerCertificate(), "the proof pins the worker's certificate");
        }
    }

    @Test
    void aTrackerThatRefusesOrCannotBeReachedEndsTheWorker() throws Exception {
        try (ThrowawaySiteKey key = ThrowawaySiteKey.create("holder-announcement")) {
            Endpoint gone;
            try (LineServer tracker = fakeTracker(new ArrayList<>(), "error job 42 has no borrowed vGPU 1")) {
                NetworkException refused = assertThrows(
                        NetworkException.class,
                        () -> HolderAnnouncement.parse(tracker.endpoint().toString(), "42:1")
                                .tell(
                                        new Endpoint("10.0.0.2", 7501),
                                        "w",
                                        Optional.empty(),
                                        SiteKey.load(key.keyFile())));
                assertEquals(NetworkException.Code.REFUSED, refused.code());
                assertTrue(refused.getMessage().contains("error job 42 has no borrowed vGPU 1"), refused.getMessage());
                assertTrue(
                        refused.getMessage().contains("did not take worker w at 10.0.0.2:7501 for job 42 vGPU 1: "),
                        "names the worker by its id: " + refused.getMessage());
                gone = tracker.endpoint();
            }
            NetworkException unreachable = assertThrows(
                    NetworkException.class,
                    () -> HolderAnnouncement.parse(gone.toString(), "42:1")
                            .tell(new Endpoint("10.0.0.2", 7501), "w", Optional.empty(), SiteKey.load(key.keyFile())));
            assertEquals(NetworkException.Code.UNREACHABLE, unreachable.code());
            assertTrue(
                    unreachable.getMessage().contains("cannot tell the tracker that worker w listens at 10.0.0.2:7501"),
                    unreachable.getMessage());
            HolderAnnouncement.Leaving leaving =
                    HolderAnnouncement.parse(gone.toString(), "42:1").leave("w", SiteKey.load(key.keyFile()));
            assertFalse(leaving.evacuating());
            assertTrue(
                    leaving.reply().startsWith("cannot tell the tracker " + gone + " that worker w leaves: "),
                    leaving.reply());
        }
    }

    @Test
    void malformedLendsAndTrackersAreUsageErrors() {
        for (String lend : List.of("42", ":1", "42:x", "42:")) {
            assertThrows(ParseException.class, () -> HolderAnnouncement.parse("127.0.0.1:1", lend), lend);
        }
        assertThrows(ParseException.class, () -> HolderAnnouncement.parse("nonsense", "42:1"));
    }

    /** A tracker that answers every request with {@code reply} and keeps the requests. */
    static LineServer fakeTracker(List<String> requests, String reply) {
        return LineServer.start(
                new Endpoint("127.0.0.1", 0),
                new LineServer.Limits("fake tracker", 4096, 4, Duration.ofSeconds(5)),
                (request, host) -> {
                    requests.add(request.text());
                    return List.of(reply);
                });
    }
}
