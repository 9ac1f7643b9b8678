package org.vgpu.simulator.workload;

/**
 * What kind of GPU program a job runs, which decides how much slower it goes while some of its vGPUs are
 * remote. The overhead model holds one slowdown per class; a trace that does not say gets {@link #UNKNOWN},
 * which the model prices like the project's own measured MD application.
 */
public enum WorkloadClass {
    /** Many short launches and small copies, like the MD application of the benchmarks. */
    MOLECULAR_DYNAMICS,
    /** Long kernels over data that stays on the GPU: remoting costs little. */
    COMPUTE_BOUND,
    /** Deep-learning training steps: launches, library calls and per-step copies. */
    TRAINING,
    /** The input did not say. */
    UNKNOWN
}
