package org.vgpu.simulator.result;

/** The four ways one workload is run, compared in one simulation. */
public enum Policy {
    /** Slurm alone: a job waits until one node has all its GPUs. */
    SLURM_ALONE("slurm"),
    /** Borrowing without migration, what rCUDA gives: borrowed GPUs stay remote until the job ends. */
    BORROW_ONLY("borrow"),
    /** vgpu: borrowing, and the hook moves borrowed GPUs home when local ones free up. */
    VGPU("vgpu"),
    /** vgpu with every overhead set to zero: the upper bound of what borrowing can give. */
    VGPU_NO_OVERHEAD("vgpu-free");

    private final String shortName;

    Policy(String shortName) {
        this.shortName = shortName;
    }

    /** The name the command line and the reports use. */
    public String shortName() {
        return shortName;
    }
}
