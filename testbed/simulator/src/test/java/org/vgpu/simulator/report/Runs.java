package org.vgpu.simulator.report;

import java.util.List;

import org.vgpu.simulator.result.JobOutcome;
import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;

/** Hand-made runs whose figures the tests work out by hand. */
final class Runs {
    private Runs() {}

    /** Five jobs submitted at 0, each natively 100 s on 1 GPU, waiting 0, 100, 200, 300 and 400 s under Slurm alone. */
    static PolicyRun slurmAlone() {
        return new PolicyRun(
                Policy.SLURM_ALONE,
                List.of(
                        job("a", 0, 0, 0, 0),
                        job("b", 100, 0, 0, 0),
                        job("c", 200, 0, 0, 0),
                        job("d", 300, 0, 0, 0),
                        job("e", 400, 0, 0, 0)),
                500,
                2,
                500,
                10,
                5_000,
                0);
    }

    /**
     * The same jobs under vgpu: two borrow and start at once but run 10 % and 30 % slower (the slower one reaching its
     * time limit), one migration.
     */
    static PolicyRun vgpu() {
        return new PolicyRun(
                Policy.VGPU,
                List.of(
                        job("a", 0, 0, 0, 0),
                        job("b", 0, 1, 1, 0.10),
                        killed(job("c", 0, 1, 0, 0.30)),
                        job("d", 100, 0, 0, 0),
                        job("e", 200, 0, 0, 0)),
                540,
                2,
                300,
                20,
                40_000,
                20_000);
    }

    private static JobOutcome killed(JobOutcome job) {
        return new JobOutcome(
                job.jobId(),
                job.submitSecond(),
                job.startSecond(),
                job.endSecond(),
                job.gpus(),
                job.borrowedGpus(),
                job.migrations(),
                job.remoteGpuSeconds(),
                job.nativeRunSeconds(),
                true);
    }

    private static JobOutcome job(String id, double wait, int borrowed, int migrations, double slowdown) {
        double run = 100 * (1 + slowdown);
        return new JobOutcome(id, 0, wait, wait + run, 1, borrowed, migrations, borrowed * 1_800.0, 100, false);
    }
}
