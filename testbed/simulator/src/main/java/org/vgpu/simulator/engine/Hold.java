package org.vgpu.simulator.engine;

/**
 * GPUs and CPUs a running job holds on one node: its own node's share, or one lent GPU with its holder's CPU.
 * Backfill plans with when each hold ends at the latest (its job's time limit).
 */
final class Hold {
    final RunningJob job;
    int gpus;
    final int cpus;

    Hold(RunningJob job, int gpus, int cpus) {
        this.job = job;
        this.gpus = gpus;
        this.cpus = cpus;
    }
}
