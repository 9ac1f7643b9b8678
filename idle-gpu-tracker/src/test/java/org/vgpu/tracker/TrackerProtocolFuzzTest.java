package org.vgpu.tracker;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.process.BoundedCommand;
import org.vgpu.tracker.server.MungeVerifier;
import org.vgpu.tracker.server.TrackerProtocol;
import org.vgpu.tracker.server.TrackerRequest;

/**
 * Fuzz targets for the tracker's line protocol (docs/fuzzing.md), answered by {@link TrackerProtocol} of one tracker
 * over {@link TestCluster} (the tracker keeps its state between inputs, as a daemon does between connections). Every
 * request gets reply lines; none may be the "internal error" that stands for an exception the protocol did not
 * expect, and none may be empty. A request that parses ({@link TrackerRequest#parse}) round-trips: the line it
 * formats parses to the same request, and formats to the same line.
 *
 * <ul>
 *   <li>{@link #requests}: an input is what a client writes on the tracker's socket, read into lines as the server
 *       reads them ({@link BoundedLineReader} at the bridge's request limit), with {@code --auth none}.
 *   <li>{@link #munge}: the tracker runs with {@code --auth munge}, and the input is one request and what
 *       {@code unmunge} gives back for its credential (see {@link UnmungeOutput}): the parsing of munge's output and
 *       the sender checks that follow it.
 * </ul>
 */
class TrackerProtocolFuzzTest {
    private static final int MAX_LINES = 16;
    private static Path dir;
    private static ThrowawaySiteKey key;
    private static Ledger ledger;
    private static TrackerProtocol protocol;
    /** What the stand-in for {@code unmunge} prints for the input being run. */
    private static volatile UnmungeOutput unmunged;

    private static TrackerProtocol mungeProtocol;

    @BeforeAll
    static void tracker() throws IOException {
        dir = Files.createTempDirectory("tracker-fuzz");
        key = ThrowawaySiteKey.create("tracker-fuzz");
        ledger = Ledger.open(dir.resolve("tracker.ledger"));
        Tracker tracker = TestCluster.standingTracker(dir, key, ledger, Instant.parse("2026-11-25T08:00:00Z"));
        protocol =
                new TrackerProtocol(tracker, () -> {}, BridgeContract.REQUEST_LINE_BYTES, Optional.empty(), Set.of());
        MungeVerifier munge = new MungeVerifier(credential ->
                new BoundedCommand.Result(List.of("unmunge"), unmunged.exitCode(), unmunged.stdout(), ""));
        mungeProtocol = new TrackerProtocol(
                tracker, () -> {}, BridgeContract.REQUEST_LINE_BYTES, Optional.of(munge), Set.of("slurm"));
    }

    /**
     * One input of {@link #munge}: {@code REQUEST \n EXIT \n STDOUT}, where REQUEST is the request line (the target
     * appends a credential), EXIT unmunge's exit status (a decimal of 1 to 3 digits, anything else counts as 0) and
     * the rest what unmunge printed on standard output.
     */
    record UnmungeOutput(String request, int exitCode, String stdout) {
        static UnmungeOutput parse(byte[] input) {
            String text = new String(input, StandardCharsets.UTF_8);
            String[] parts = text.split("\n", 3);
            String exit = parts.length > 1 ? parts[1] : "";
            return new UnmungeOutput(
                    parts[0],
                    exit.matches("[0-9]{1,3}") ? Integer.parseInt(exit) : 0,
                    parts.length > 2 ? parts[2] : "");
        }
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
            if (!request.truncated()) {
                assertRoundTrip(unsigned(request.text()));
            }
            answerExpectingAReply(protocol, request);
        }
    }

    @FuzzTest(maxDuration = "1m")
    void munge(byte[] input) {
        unmunged = UnmungeOutput.parse(input);
        assertRoundTrip(unmunged.request());
        answerExpectingAReply(
                mungeProtocol, new BoundedLineReader.Line(unmunged.request() + " munge=MUNGE:fuzzed:", false));
    }

    /** The request line as the protocol parses it: without its credential. */
    private static String unsigned(String line) {
        int credential = line.lastIndexOf(" " + BridgeContract.CREDENTIAL_PREFIX);
        return credential < 0 ? line : line.substring(0, credential);
    }

    /** parse, format, parse: the same request, and the same line formatted from it. */
    private static void assertRoundTrip(String line) {
        if (line.isEmpty() || !line.chars().allMatch(c -> c >= ' ' && c <= '~')) {
            return; // the protocol refuses it before parsing
        }
        TrackerRequest parsed;
        try {
            parsed = TrackerRequest.parse(line);
        } catch (TrackerRequest.Malformed e) {
            return;
        }
        String formatted = parsed.format();
        TrackerRequest again;
        try {
            again = TrackerRequest.parse(formatted);
        } catch (TrackerRequest.Malformed e) {
            throw new AssertionError("'" + line + "' parsed, its formatted '" + formatted + "' not: " + e.getMessage());
        }
        if (!again.equals(parsed) || !again.format().equals(formatted)) {
            throw new AssertionError(
                    "'" + line + "' parsed to " + parsed + ", formatted '" + formatted + "' to " + again);
        }
    }

    private static void answerExpectingAReply(TrackerProtocol answering, BoundedLineReader.Line request) {
        List<String> replies = answering.answer(request, "127.0.0.1");
        if (replies.isEmpty() || replies.stream().anyMatch(String::isEmpty)) {
            throw new AssertionError("no reply line to '" + request.text() + "': " + replies);
        }
        // The reply that stands for an unexpected exception; a reply may well contain the words elsewhere, echoing
        // what it was given (unmunge's STATUS line, found by the munge target).
        if (replies.stream().anyMatch(reply -> reply.startsWith("error tracker failed to answer: an internal error"))) {
            throw new AssertionError("'" + request.text() + "' raised an unexpected exception: " + replies);
        }
    }
}
