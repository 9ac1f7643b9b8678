package org.vgpu.simulator.input;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;

import org.apache.commons.math3.distribution.EnumeratedDistribution;
import org.apache.commons.math3.distribution.EnumeratedIntegerDistribution;
import org.apache.commons.math3.distribution.ExponentialDistribution;
import org.apache.commons.math3.distribution.LogNormalDistribution;
import org.apache.commons.math3.distribution.UniformRealDistribution;
import org.apache.commons.math3.random.RandomGenerator;
import org.apache.commons.math3.random.Well19937c;
import org.apache.commons.math3.util.Pair;

import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.Workload;
import org.vgpu.simulator.workload.WorkloadClass;

/**
 * A generated HPC-like mix, the same for the same seed (one Well19937c generator drives every draw, in a fixed
 * order). Each job asks 1, 2, 4 or 8 GPUs with weights {@link #SIZE_WEIGHTS} (sizes no node holds are left out and
 * the rest re-weighted) and one CPU per GPU; runs for a log-normal time of median
 * {@value #MEDIAN_RUN_SECONDS} s and shape {@value #RUN_SHAPE} (heavy-tailed: the mean is about 3x the median, one
 * job in 20 runs over 12x the median), cut to [{@value #MIN_RUN_SECONDS} s, {@value #MAX_RUN_SECONDS} s]; asks a
 * time limit of its run times a uniform factor in [1, {@value #MAX_LIMIT_FACTOR}], rounded up to a whole minute
 * (users overestimate); runs a workload class drawn with shares {@link #CLASS_SHARES}; and belongs to one of
 * {@value #USERS} users. Arrivals are a Poisson process whose rate makes the jobs' GPU-seconds the asked fraction
 * of the cluster's GPU capacity over the time they arrive in.
 */
public final class HpcMixGenerator {
    static final int[] SIZES = {1, 2, 4, 8};
    static final double[] SIZE_WEIGHTS = {0.40, 0.25, 0.20, 0.15};
    static final double MEDIAN_RUN_SECONDS = 1_800;
    static final double RUN_SHAPE = 1.5;
    static final long MIN_RUN_SECONDS = 60;
    static final long MAX_RUN_SECONDS = 48 * 3_600;
    static final double MAX_LIMIT_FACTOR = 3;
    static final int USERS = 20;
    static final List<Pair<WorkloadClass, Double>> CLASS_SHARES = List.of(
            Pair.create(WorkloadClass.MOLECULAR_DYNAMICS, 0.4),
            Pair.create(WorkloadClass.TRAINING, 0.4),
            Pair.create(WorkloadClass.COMPUTE_BOUND, 0.2));

    private HpcMixGenerator() {}

    /** {@code count} jobs offering {@code level}'s load to {@code nodes}, drawn from {@code seed}. */
    public static LoadedWorkload generate(LoadLevel level, List<SimNode> nodes, int count, long seed) {
        if (count < 1) {
            throw new IllegalArgumentException("a generated mix needs 1 job or more, got " + count);
        }
        // a job asks one CPU per GPU, so a node holds jobs of at most as many GPUs as it has of both
        int largest = nodes.stream()
                .mapToInt(node -> Math.min(node.gpus(), node.cpus()))
                .max()
                .orElse(0);
        int capacity = nodes.stream().mapToInt(SimNode::gpus).sum();
        RandomGenerator random = new Well19937c(seed);
        EnumeratedIntegerDistribution sizes = sizes(random, largest);
        LogNormalDistribution runs = new LogNormalDistribution(random, Math.log(MEDIAN_RUN_SECONDS), RUN_SHAPE);
        UniformRealDistribution limitFactors = new UniformRealDistribution(random, 1, MAX_LIMIT_FACTOR);
        EnumeratedDistribution<WorkloadClass> classes = new EnumeratedDistribution<>(random, CLASS_SHARES);
        EnumeratedIntegerDistribution users = new EnumeratedIntegerDistribution(
                random, java.util.stream.IntStream.rangeClosed(1, USERS).toArray(), uniform(USERS));

        int[] gpus = new int[count];
        long[] run = new long[count];
        double work = 0;
        for (int i = 0; i < count; i++) {
            gpus[i] = sizes.sample();
            run[i] = Math.clamp(Math.round(runs.sample()), MIN_RUN_SECONDS, MAX_RUN_SECONDS);
            work += (double) gpus[i] * run[i];
        }
        // count arrivals at rate r span count / r seconds; the load asked fixes that span as work / (load x capacity)
        double meanGap = work / (level.offeredLoad() * capacity) / count;
        ExponentialDistribution gaps = new ExponentialDistribution(random, meanGap);
        List<SimJob> jobs = new ArrayList<>(count);
        double submit = 0;
        for (int i = 0; i < count; i++) {
            if (i > 0) {
                submit += gaps.sample();
            }
            long limit = SlurmTimes.limitCovering(Math.round(Math.ceil(run[i] * limitFactors.sample())));
            jobs.add(new SimJob(
                    "g" + (i + 1),
                    Math.round(submit),
                    gpus[i],
                    gpus[i],
                    limit,
                    run[i],
                    "user" + users.sample(),
                    classes.sample(),
                    OptionalLong.empty()));
        }
        String source = String.format(Locale.ROOT, "generated %s mix, %d jobs, seed %d", level.word(), count, seed);
        Workload workload = new Workload(source, nodes, jobs);
        List<String> summary = List.of(
                String.format(
                        Locale.ROOT,
                        "generated %,d jobs offering %.0f %% of %,d GPUs (%s load), seed %d",
                        count,
                        level.offeredLoad() * 100,
                        capacity,
                        level.word(),
                        seed),
                OfferedLoad.line(workload));
        return new LoadedWorkload(workload, summary);
    }

    private static EnumeratedIntegerDistribution sizes(RandomGenerator random, int largest) {
        List<Integer> fitting = new ArrayList<>();
        List<Double> weights = new ArrayList<>();
        for (int i = 0; i < SIZES.length; i++) {
            if (SIZES[i] <= largest) {
                fitting.add(SIZES[i]);
                weights.add(SIZE_WEIGHTS[i]);
            }
        }
        if (fitting.isEmpty()) {
            throw new IllegalArgumentException("a generated mix needs a node with a GPU");
        }
        return new EnumeratedIntegerDistribution(
                random,
                fitting.stream().mapToInt(Integer::intValue).toArray(),
                weights.stream().mapToDouble(Double::doubleValue).toArray());
    }

    private static double[] uniform(int count) {
        double[] weights = new double[count];
        java.util.Arrays.fill(weights, 1.0 / count);
        return weights;
    }
}
