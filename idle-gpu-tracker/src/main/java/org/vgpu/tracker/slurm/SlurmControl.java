package org.vgpu.tracker.slurm;

import java.util.Collection;
import java.util.Optional;

/**
 * What the tracker reads from and does to Slurm. Every method either does what it says or throws
 * {@link SlurmException} naming the command and Slurm's answer.
 */
public interface SlurmControl {
    /** Name prefix of holder jobs, followed by {@code <job>-v<vgpu>}; with the lend partition it marks the tracker's own jobs. */
    String HOLDER_NAME_PREFIX = "vgpu-holder-";

    /** Name prefix of grant holders, followed by {@code <job>-v<vgpu>}: a GPU of the job's node claimed for a move home. */
    String GRANT_NAME_PREFIX = "vgpu-grant-";

    /** Every node and every job Slurm still remembers. */
    SlurmInventory inventory();

    /** One job, or empty when Slurm no longer knows it. */
    Optional<SlurmJob> job(long id);

    boolean partitionExists(String partition);

    /**
     * Submits a holder job that keeps one GPU of {@code node} for vGPU {@code vgpu} of job
     * {@code forJob}, in the lend partition, running {@code script} (which serves the GPU); returns
     * its job id.
     */
    long submitHolder(String node, long forJob, int vgpu, String script);

    /** Where holder jobs write their output. */
    HolderOutput holderOutput();

    /**
     * Submits a grant holder that claims one GPU of {@code node} (the node of job {@code forJob}) for vGPU
     * {@code vgpu} to move onto, in the lend partition; it only waits: the job's own process drives the
     * GPU. Returns its job id.
     */
    long submitGrant(String node, long forJob, int vgpu);

    /** How long a job has run and may run; empty when Slurm no longer knows it. */
    Optional<JobTime> jobTime(long id);

    /** Cancels jobs; ids Slurm no longer knows are not an error. */
    void cancel(Collection<Long> jobs);

    /**
     * Pins a held vgpu job to {@code node} and adds its local GPUs to its request
     * ({@code Gres=gpu:L,vgpu:N}), so Slurm allocates those GPUs to the job itself.
     */
    void pin(long job, String node, int localGpus, int vgpus);

    /** Releases a held job. */
    void release(long job);

    /** Sets the job's comment, which {@code squeue -O comment} and {@code scontrol show job} show its user. */
    void comment(long job, String text);
}
