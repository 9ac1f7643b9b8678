package org.vgpu.simulator.result;

/**
 * What happened to one job under one policy, in seconds from the workload's start.
 *
 * @param borrowedGpus how many of its GPUs were remote when it started
 * @param migrations how many of those the hook moved home
 * @param remoteGpuSeconds GPU-seconds its vGPUs spent remote
 * @param nativeRunSeconds how long it would have run with all GPUs native (the input's run time)
 * @param killedAtTimeLimit whether Slurm killed it at its time limit before its work was done (the slowdown of its
 *     remote vGPUs pushed it past the limit)
 */
public record JobOutcome(
        String jobId,
        long submitSecond,
        double startSecond,
        double endSecond,
        int gpus,
        int borrowedGpus,
        int migrations,
        double remoteGpuSeconds,
        long nativeRunSeconds,
        boolean killedAtTimeLimit) {

    public double waitSeconds() {
        return startSecond - submitSecond;
    }

    /** How much longer it ran than it would have natively, as a fraction (0.03 = 3 % slower). */
    public double slowdown() {
        return nativeRunSeconds == 0 ? 0 : (endSecond - startSecond) / nativeRunSeconds - 1;
    }

    /** Bounded slowdown with a 10-second bound, the measure of Feitelson's workload studies. */
    public double boundedSlowdown() {
        double response = endSecond - submitSecond;
        return Math.max(1, response / Math.max(nativeRunSeconds, 10));
    }
}
