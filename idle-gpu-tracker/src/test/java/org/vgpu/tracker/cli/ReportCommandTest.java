package org.vgpu.tracker.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.net.Endpoint;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.LedgerLines;
import org.vgpu.tracker.ledger.Lend;

/** {@code vgpu report} against a tracker socket that answers {@code status} with lines the tracker writes. */
class ReportCommandTest {
    private static final Instant PLANNED = Instant.parse("2026-11-21T12:00:00Z");
    private final List<LineServer> servers = new ArrayList<>();

    @AfterEach
    void stop() {
        servers.forEach(LineServer::close);
    }

    @Test
    void showsAssembliesBorrowedGpusWaitingJobsAndEndedOnesInEachFormat() {
        Assembly assembly = new Assembly(
                        42,
                        "alice",
                        "n1",
                        3,
                        1,
                        Assembly.Phase.SECURING,
                        PLANNED,
                        Optional.empty(),
                        List.of(
                                Lend.planned(1, "n2")
                                        .withHolder(43)
                                        .withGpu(3)
                                        .withWorker(new Endpoint("10.0.0.2", 7501), "n2-d3-a"),
                                Lend.planned(2, "n3")
                                        .withHolder(44)
                                        .withGpu(1)
                                        .withWorker(new Endpoint("10.0.0.3", 7502), "n3-d1-b")))
                .releasedAt(PLANNED.plusSeconds(3));
        Endpoint tracker = tracker(List.of(
                LedgerLines.assembly(assembly),
                "lost job=42 holders=44",
                "waiting job=50 user=bob vgpus=2 reason=waiting for 2 GPUs: most idle node n1 has 0, other nodes can lend 1",
                "ended job=40 user=carol node=n2 vgpus=2 borrowed=1 why=done at=2026-11-21T11:59:00Z",
                "ok assemblies=1 waiting=1"));

        Run table = report("--tracker", tracker.toString());
        assertEquals(0, table.status(), table.err());
        assertTrue(
                table.out()
                        .contains("42   alice  n1    3      1      1=n2:3(holder 43) 2=n3:1(holder 44 LOST)  released"),
                table.out());
        assertTrue(
                table.out()
                        .contains(
                                "50   bob   2      waiting for 2 GPUs: most idle node n1 has 0, other nodes can lend 1"),
                table.out());
        assertTrue(table.out().contains("40   carol  n2    2      1         done"), table.out());

        Run csv = report("--tracker", tracker.toString(), "--format", "csv");
        assertEquals(
                List.of(
                        "kind,job,user,node,vgpu,lender,gpu,holder,worker,phase,reason",
                        "local,42,alice,n1,0,n1,,,,released,",
                        "borrowed,42,alice,n1,1,n2,3,43,10.0.0.2:7501,released,",
                        "borrowed,42,alice,n1,2,n3,1,44,10.0.0.3:7502,released,",
                        "waiting,50,bob,,,,,,,held,\"waiting for 2 GPUs: most idle node n1 has 0, other nodes can lend 1\""),
                csv.out().lines().toList());

        Run json = report("--tracker", tracker.toString(), "--format", "json");
        assertTrue(
                json.out()
                        .startsWith("{\"assemblies\":[{\"job\":42,\"user\":\"alice\",\"node\":\"n1\",\"vgpus\":3,"
                                + "\"local_gpus\":1,\"phase\":\"released\""),
                json.out());
        assertTrue(
                json.out()
                        .contains("{\"vgpu\":2,\"node\":\"n3\",\"holder\":44,\"gpu\":1,\"worker\":\"10.0.0.3:7502\","
                                + "\"worker_id\":\"n3-d1-b\",\"holder_lost\":true}"),
                json.out());
        assertTrue(json.out().contains("\"waiting\":[{\"job\":50,\"user\":\"bob\",\"vgpus\":2,"), json.out());
    }

    @Test
    void aTrackerThatCannotBeReachedOrAnswersGarbageIsAnErrorAndBadUsageIsAUsageError() {
        Endpoint garbage = tracker(List.of("hello there", "ok"));
        Run refused = report("--tracker", garbage.toString());
        assertEquals(1, refused.status());
        assertTrue(
                refused.err()
                        .contains("cannot read the tracker's status line 'hello there': unknown line kind 'hello'"),
                refused.err());

        Endpoint closed = tracker(List.of("ok"));
        servers.forEach(LineServer::close);
        Run unreachable = report("--tracker", closed.toString());
        assertEquals(1, unreachable.status());
        assertTrue(unreachable.err().contains("cannot ask " + closed + " 'status'"), unreachable.err());

        assertEquals(2, report().status());
        assertEquals(2, report("--tracker", "h:1", "--format", "xml").status());
        assertEquals(2, report("--tracker", "nonsense").status());
    }

    private Endpoint tracker(List<String> statusReply) {
        LineServer server = LineServer.start(
                new Endpoint("127.0.0.1", 0),
                new LineServer.Limits("fake tracker", 64, 4, Duration.ofSeconds(5)),
                (request, host) -> statusReply);
        servers.add(server);
        return server.endpoint();
    }

    private record Run(int status, String out, String err) {}

    private static Run report(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = SubcommandRunner.run(
                new ReportCommand(),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
