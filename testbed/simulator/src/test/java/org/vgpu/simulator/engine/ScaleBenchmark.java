package org.vgpu.simulator.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.Random;

import org.vgpu.simulator.result.JobOutcome;
import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.Workload;
import org.vgpu.simulator.workload.WorkloadClass;

/**
 * The engine at cluster scale, not a test (no assertion on time): {@code ScaleBenchmark [NODES [JOBS [LOAD]]]}
 * simulates NODES nodes of 8 GPUs and JOBS seeded jobs (1, 2, 4 or 8 GPUs, log-normal run times, submitted at
 * LOAD times what the cluster can run) under every policy and prints the wall time of each and the tracker's planner
 * and hook time per scheduling pass.
 */
public final class ScaleBenchmark {
    private ScaleBenchmark() {}

    public static void main(String[] args) {
        int nodes = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        int jobs = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
        double load = args.length > 2 ? Double.parseDouble(args[2]) : 0.9;
        Workload workload = workload(nodes, jobs, load, 1);
        System.out.printf(Locale.ROOT, "nodes %d x 8 GPUs, jobs %d, offered load %.2f%n", nodes, jobs, load);
        Simulator simulator = new Simulator(OverheadModel.measured());
        for (Policy policy : Policy.values()) {
            long began = System.nanoTime();
            PolicyRun run = simulator.run(workload, policy, fraction -> {});
            double wall = (System.nanoTime() - began) / 1e9;
            double passes = Math.max(1, run.passes());
            System.out.printf(
                    Locale.ROOT,
                    "%-9s wall %6.1f s  passes %7d  planner %8.1f us/pass  hook %7.1f us/pass  mean wait %8.0f s"
                            + "  borrowed %6d  migrations %6d  utilisation %.3f%n",
                    policy.shortName(),
                    wall,
                    run.passes(),
                    run.plannerNanos() / 1e3 / passes,
                    run.hookNanos() / 1e3 / passes,
                    run.jobs().stream()
                            .mapToDouble(JobOutcome::waitSeconds)
                            .average()
                            .orElse(0),
                    run.jobs().stream().filter(job -> job.borrowedGpus() > 0).count(),
                    run.jobs().stream().mapToInt(JobOutcome::migrations).sum(),
                    run.gpuUtilisation());
        }
    }

    /** A seeded mix: GPUs 1/2/4/8 with weights 40/25/20/15 %, log-normal run times (median 20 min, sigma 1, at
     * most 2 days), limits 1-3 times the run time. */
    static Workload workload(int nodeCount, int jobCount, double load, long seed) {
        Random random = new Random(seed);
        List<SimNode> nodes = new ArrayList<>();
        for (int i = 0; i < nodeCount; i++) {
            nodes.add(new SimNode(String.format(Locale.ROOT, "n%04d", i), 8, 64));
        }
        double meanGpuSeconds = 0;
        List<long[]> shapes = new ArrayList<>();
        for (int i = 0; i < jobCount; i++) {
            double pick = random.nextDouble();
            int gpus = pick < 0.40 ? 1 : pick < 0.65 ? 2 : pick < 0.85 ? 4 : 8;
            long run = Math.max(60, Math.min(2 * 86_400, Math.round(Math.exp(Math.log(1200) + random.nextGaussian()))));
            shapes.add(new long[] {gpus, run});
            meanGpuSeconds += gpus * (double) run / jobCount;
        }
        double meanGap = meanGpuSeconds / (load * 8.0 * nodeCount);
        WorkloadClass[] classes = WorkloadClass.values();
        List<SimJob> jobs = new ArrayList<>();
        double submit = 0;
        for (int i = 0; i < jobCount; i++) {
            submit += -Math.log(1 - random.nextDouble()) * meanGap;
            long[] shape = shapes.get(i);
            long limit = Math.round(shape[1] * (1 + 2 * random.nextDouble()));
            jobs.add(new SimJob(
                    "j" + i,
                    Math.round(submit),
                    (int) shape[0],
                    1 + random.nextInt(8),
                    Math.max(limit, shape[1]),
                    shape[1],
                    "",
                    classes[random.nextInt(classes.length)],
                    OptionalLong.empty()));
        }
        return new Workload("scale benchmark seed " + seed, nodes, jobs);
    }
}
