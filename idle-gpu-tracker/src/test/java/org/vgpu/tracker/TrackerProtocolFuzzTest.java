package org.vgpu.tracker;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.server.TrackerProtocol;

/**
 * Fuzz target for the tracker's line protocol (docs/fuzzing.md): an input is what a client writes on the tracker's
 * socket, read into lines as the server reads them ({@link BoundedLineReader} at the bridge's request limit) and each
 * answered by {@link TrackerProtocol} of one tracker over {@link TestCluster} (the tracker keeps its state between
 * inputs, as a daemon does between connections). Every request gets reply lines; none may be the "internal error"
 * that stands for an exception the protocol did not expect, and none may be empty.
 */
class TrackerProtocolFuzzTest {
    private static final int MAX_LINES = 16;
    private static Path dir;
    private static ThrowawaySiteKey key;
    private static Ledger ledger;
    private static TrackerProtocol protocol;

    @BeforeAll
    static void tracker() throws IOException {
        dir = Files.createTempDirectory("tracker-fuzz");
        key = ThrowawaySiteKey.create("tracker-fuzz");
        InMemorySlurm slurm = new InMemorySlurm();
        var site = TestCluster.configure(dir, key, slurm, "", "[slurm]\njob_partition = gpu\n");
        ledger = Ledger.open(dir.resolve("tracker.ledger"));
        Clock clock = Clock.fixed(Instant.parse("2026-11-25T08:00:00Z"), ZoneOffset.UTC);
        Tracker tracker =
                new Tracker(site, slurm, ledger, SiteKey.load(key.keyFile()), Tracker.Settings.defaults(), clock);
        protocol =
                new TrackerProtocol(tracker, () -> {}, BridgeContract.REQUEST_LINE_BYTES, Optional.empty(), Set.of());
    }

    @AfterAll
    static void stop() throws IOException {
        ledger.close();
        key.close();
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder())
                    .forEach(path -> path.toFile().delete());
        }
    }

    @FuzzTest(maxDuration = "1m")
    void requests(byte[] input) throws IOException {
        BoundedLineReader reader =
                new BoundedLineReader(new ByteArrayInputStream(input), BridgeContract.REQUEST_LINE_BYTES);
        BoundedLineReader.Line request;
        for (int i = 0; i < MAX_LINES && (request = reader.readLine()) != null; i++) {
            List<String> replies = protocol.answer(request, "127.0.0.1");
            if (replies.isEmpty() || replies.stream().anyMatch(String::isEmpty)) {
                throw new AssertionError("no reply line to '" + request.text() + "': " + replies);
            }
            if (replies.stream().anyMatch(reply -> reply.contains("an internal error"))) {
                throw new AssertionError("'" + request.text() + "' raised an unexpected exception: " + replies);
            }
        }
    }
}
