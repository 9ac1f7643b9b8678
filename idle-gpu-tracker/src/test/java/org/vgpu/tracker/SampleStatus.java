package org.vgpu.tracker;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import org.vgpu.common.net.Endpoint;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Lend;

/** One {@link StatusReport} with something in every section, for the report's and the metrics' tests. */
public final class SampleStatus {
    public static final Instant PLANNED = Instant.parse("2026-11-21T12:00:00Z");
    public static final Instant NOW = Instant.parse("2026-11-21T12:05:00Z");

    private SampleStatus() {}

    /**
     * Job 42 (alice) runs on n1 with its GPU 5 and borrows n2:3 (holder 43, 1200 calls reported) and n3:1
     * (holder 44, lost); job 41's vGPU 1 moved home n3:0 -> n1:2 in 180 ms; job 50 (bob) is held; n2 has
     * GPUs 0 and 2 idle, n1 none; job 40 (carol) ended, the last of 3 done and 1 aborted.
     */
    public static StatusReport report() {
        return withJob42(job42());
    }

    /** {@link #report()} after job 42's vGPU 1 moved home onto GPU 2 of n1, kept by grant holder 45. */
    public static StatusReport reportAfterVgpu1CameHome() {
        Assembly job42 = job42();
        return withJob42(job42.withLend(job42.lends().getFirst().movedHome("n1", 45, 2)));
    }

    private static Assembly job42() {
        return new Assembly(
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
    }

    private static StatusReport withJob42(Assembly assembly) {
        return new StatusReport(
                NOW,
                List.of(new StatusReport.Live(
                        assembly,
                        List.of(44L),
                        List.of(5),
                        Map.of(1, new StatusReport.Forwarded(1200, 987_654)),
                        Map.of())),
                List.of(new StatusReport.Migration(
                        7,
                        41,
                        1,
                        "n3:0",
                        "n1:2",
                        "GPU 2 of n1 was released",
                        PLANNED.plusSeconds(60),
                        Optional.of(PLANNED.plusSeconds(61)),
                        OptionalLong.of(180),
                        OptionalLong.of(1L << 30),
                        "done")),
                List.of(new StatusReport.Waiting(
                        50, "bob", 2, "waiting for 2 GPUs: most idle node n1 has 0, other nodes can lend 1")),
                List.of(new StatusReport.NodeIdle("n1", List.of()), new StatusReport.NodeIdle("n2", List.of(0, 2))),
                List.of(new StatusReport.Ended(
                        40, "carol", "n2", 2, 1, "done", Instant.parse("2026-11-21T11:59:00Z"), Optional.empty())),
                Map.of("done", 3L, "aborted", 1L));
    }
}
