package org.vgpu.migration.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.net.Endpoint;

/** vgpu migrate JOB VGPU against a stand-in tracker: the request, the progress it follows, exit statuses. */
@Timeout(60)
class MigrateThroughTrackerTest {
    private final List<String> requests = new CopyOnWriteArrayList<>();
    private final AtomicInteger progressAsked = new AtomicInteger();
    private LineServer tracker;

    @BeforeEach
    void tracker() {
        tracker = LineServer.start(
                new Endpoint("127.0.0.1", 0),
                new LineServer.Limits("fake tracker", 4096, 8, Duration.ofSeconds(10)),
                (request, localHost) -> {
                    requests.add(request.text());
                    return List.of(reply(request.text()));
                });
    }

    @AfterEach
    void stop() {
        tracker.close();
    }

    private String reply(String request) {
        return switch (request) {
            case "migrate 42 1" -> "ok migration 7 started: vGPU 1 of job 42 moves home to n1";
            case "migrate 42 2" -> "ok migration 8 started: vGPU 2 of job 42 moves home to n1";
            case "migrate 99 1" -> "error job 99 has no running vGPU assembly at this tracker";
            case "migration 7" ->
                progressAsked.incrementAndGet() < 3
                        ? "ok migration id=7 job=42 vgpu=1 from=n2:3 to=n1:? by=admin state=claiming started=x"
                                + " blocked_ms=0 bytes=0 what=claiming_a_GPU_of_n1 reason=asked"
                        : "ok migration id=7 job=42 vgpu=1 from=n2:3 to=n1:0 by=admin state=ok started=x ended=y"
                                + " blocked_ms=120 bytes=4096 what=the_agent_moved_it reason=asked";
            case "migration 8" ->
                "ok migration id=8 job=42 vgpu=2 from=n3:3 to=n1:1 by=admin state=failed started=x ended=y"
                        + " blocked_ms=0 bytes=0 what=the_agent_could_not_move_it reason=asked";
            default -> "error unexpected " + request;
        };
    }

    private record Run(int status, String out, String err) {}

    private Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] all = new String[args.length + 2];
        all[0] = "--tracker";
        all[1] = tracker.endpoint().toString();
        System.arraycopy(args, 0, all, 2, args.length);
        int status = SubcommandRunner.run(
                new MigrateCommand(Map.<String, String>of()::get),
                all,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aMoveThroughTheTrackerIsFollowedUntilItEnds() {
        Run moved = run("42", "1");

        assertEquals(0, moved.status(), moved.err());
        assertEquals(List.of("migrate 42 1", "migration 7", "migration 7", "migration 7"), requests);
        assertEquals(
                "migration 7 started: vGPU 1 of job 42 moves home to n1\n"
                        + "migration 7 claiming: claiming a GPU of n1\n"
                        + "migration 7 ok: the agent moved it\n"
                        + "moved: n2:3 -> n1:0, blocked 120 ms, 4096 bytes copied\n",
                moved.out());
    }

    @Test
    void aFailedMoveExitsOneAndNoWaitReturnsAtOnce() {
        Run failed = run("42", "2");
        assertEquals(1, failed.status());
        assertTrue(failed.out().endsWith("not moved: n3:3 -> n1:1, blocked 0 ms, 0 bytes copied\n"), failed.out());

        requests.clear();
        Run started = run("--no-wait", "42", "1");
        assertEquals(0, started.status());
        assertEquals(List.of("migrate 42 1"), requests);
    }

    @Test
    void anUnknownJobIsTheTrackersReasonAndExitOne() {
        Run refused = run("99", "1");

        assertEquals(1, refused.status());
        assertTrue(
                refused.err().contains("refused: job 99 has no running vGPU assembly at this tracker"), refused.err());
    }

    @Test
    void usageErrors() {
        assertEquals(2, run("42").status(), "no vGPU");
        assertEquals(2, run("42", "1", "n1", "n2").status(), "too many words");
        assertEquals(2, run("42", "1", "--vgpu", "1", "--to", "0").status(), "two forms at once");
        assertEquals(2, run("--auth", "kerberos", "42", "1").status(), "unknown authentication");
        assertTrue(requests.isEmpty(), requests.toString());
    }
}
