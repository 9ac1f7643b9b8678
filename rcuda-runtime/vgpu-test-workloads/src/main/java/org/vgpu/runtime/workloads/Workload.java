package org.vgpu.runtime.workloads;

import org.vgpu.common.error.InputException;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * A test workload: inputs made from a seed, the computation done on a vGPU with the test kernels,
 * and the result checked against an independent CPU reference. Everything it allocates on the
 * vGPU is freed before {@link #run} returns, also when it fails.
 */
public interface Workload {

    /** Short name for the command line, e.g. "nbody". */
    String name();

    /** One line: what it computes and how its result is checked. */
    String description();

    /**
     * Runs at {@code scale} times the default size (small enough for the CPU emulation on a CI
     * machine; larger scales are for GPUs) with inputs drawn from {@code seed}.
     *
     * @throws VgpuException when the vGPU fails; a wrong result is a failed {@link WorkloadResult}
     */
    WorkloadResult run(VirtualGpu gpu, int scale, long seed);

    /** {@code base * scale}, refusing a scale below 1 or a size that no longer fits an int. */
    static int scaled(int base, int scale) {
        if (scale < 1) {
            throw new InputException("workload scale must be >= 1, got " + scale);
        }
        try {
            return Math.multiplyExact(base, scale);
        } catch (ArithmeticException e) {
            throw new InputException("workload scale " + scale + " makes a problem size beyond 2^31");
        }
    }
}
