package org.vgpu.simulator.workload;

import java.util.Objects;
import java.util.OptionalLong;

/**
 * One job of a workload, in seconds from the workload's start.
 *
 * @param id the input's own name for it (a Slurm job id, an SWF job number, a pod name)
 * @param submitSecond when it was submitted
 * @param gpus how many GPUs it asks ({@code --gres=vgpu:N}); all on one node, as job_submit.lua allows
 * @param cpus how many CPUs it asks on that node
 * @param timeLimitSeconds its time limit, which backfill plans with
 * @param runSeconds how long it runs with all its GPUs native; at most the time limit
 * @param user who submitted it ("" when the input does not say)
 * @param workloadClass what it runs, for the overhead model
 * @param recordedStartSecond when the input says it really started, if it says: compared with a simulated start
 * @param mayBorrow whether the tracker may borrow GPUs of other nodes for it under the borrowing policies: a vgpu
 *     job; false for a plain {@code --gres=gpu} job of a history that ran with vgpu, which only its node's GPUs run
 */
public record SimJob(
        String id,
        long submitSecond,
        int gpus,
        int cpus,
        long timeLimitSeconds,
        long runSeconds,
        String user,
        WorkloadClass workloadClass,
        OptionalLong recordedStartSecond,
        boolean mayBorrow) {
    public SimJob {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(workloadClass, "workloadClass");
        Objects.requireNonNull(recordedStartSecond, "recordedStartSecond");
        if (submitSecond < 0
                || gpus < 1
                || cpus < 1
                || runSeconds < 0
                || timeLimitSeconds < 1
                || runSeconds > timeLimitSeconds) {
            throw new IllegalArgumentException("job " + id + ": needs submit >= 0, gpus >= 1, cpus >= 1 and"
                    + " 0 <= run <= time limit, got submit " + submitSecond + ", " + gpus + " GPUs, " + cpus
                    + " CPUs, run " + runSeconds + " s, limit " + timeLimitSeconds + " s");
        }
    }

    /** A job that may borrow under the borrowing policies, as every job of a what-if is. */
    public SimJob(
            String id,
            long submitSecond,
            int gpus,
            int cpus,
            long timeLimitSeconds,
            long runSeconds,
            String user,
            WorkloadClass workloadClass,
            OptionalLong recordedStartSecond) {
        this(
                id,
                submitSecond,
                gpus,
                cpus,
                timeLimitSeconds,
                runSeconds,
                user,
                workloadClass,
                recordedStartSecond,
                true);
    }
}
