package org.vgpu.simulator.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;

import org.vgpu.simulator.result.JobOutcome;
import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.Workload;
import org.vgpu.simulator.workload.WorkloadClass;

/** Hand-built clusters and jobs for the engine's tests. */
final class SmallClusters {
    private SmallClusters() {}

    static List<SimNode> nodes(int count, int gpus) {
        List<SimNode> nodes = new ArrayList<>();
        for (int i = 1; i <= count; i++) {
            nodes.add(new SimNode("n" + i, gpus, 64));
        }
        return nodes;
    }

    static SimJob job(String id, long submit, int gpus, long run, long limit) {
        return new SimJob(id, submit, gpus, 1, limit, run, "", WorkloadClass.MOLECULAR_DYNAMICS, OptionalLong.empty());
    }

    /**
     * Three 4-GPU nodes, each with 3 GPUs held by a filler (n1's ends at 200, the others' at 5,000) and one idle;
     * at 100 a 3-GPU job arrives that no node can hold alone.
     */
    static Workload scattered() {
        return scattered(200, job("x", 100, 3, 3000, 10_000));
    }

    /** Three 4-GPU nodes with one idle GPU each (n1's filler ends at {@code firstFillerEnd}, the others' at 5,000). */
    static Workload scattered(long firstFillerEnd, SimJob arriving) {
        return new Workload(
                "scattered",
                nodes(3, 4),
                List.of(
                        job("f1", 0, 3, firstFillerEnd, firstFillerEnd),
                        job("f2", 0, 3, 5000, 5000),
                        job("f3", 0, 3, 5000, 5000),
                        arriving));
    }

    /** A seeded mix of 1-8 GPU jobs on 8 nodes of 8 GPUs, submitted at about nine tenths of what they can run. */
    static Workload mix(long seed, int jobs) {
        Random random = new Random(seed);
        List<SimJob> list = new ArrayList<>();
        long submit = 0;
        WorkloadClass[] classes = WorkloadClass.values();
        for (int i = 0; i < jobs; i++) {
            submit += random.nextInt(240);
            int gpus = 1 << random.nextInt(4);
            long run = 60L + random.nextInt(3600);
            long limit = run + random.nextInt(3600) + 1L;
            list.add(new SimJob(
                    "j" + i,
                    submit,
                    gpus,
                    1 + random.nextInt(8),
                    limit,
                    run,
                    "",
                    classes[random.nextInt(classes.length)],
                    OptionalLong.empty()));
        }
        return new Workload("mix " + seed, nodes(8, 8), list);
    }

    static PolicyRun run(Workload workload, Policy policy) {
        return new Simulator(OverheadModel.measured()).run(workload, policy, fraction -> {});
    }

    static JobOutcome outcome(PolicyRun run, String id) {
        return run.jobs().stream()
                .filter(job -> job.jobId().equals(id))
                .findFirst()
                .orElseThrow();
    }

    static double meanWait(PolicyRun run) {
        return run.jobs().stream()
                .mapToDouble(JobOutcome::waitSeconds)
                .average()
                .orElse(0);
    }
}
