package org.vgpu.runtime.kernels;

import org.vgpu.runtime.api.Dim3;

/**
 * The threads of a launch as the test kernels index them: {@code blockIdx * blockDim + threadIdx}
 * per dimension. A twin runs the threads of a grid one after another; those that differ only in a
 * dimension the kernel ignores run the same work again, in sequence (on a GPU such a launch races,
 * so no twin can promise to match it; every workload launches exactly one thread per index).
 */
record ThreadGrid(Dim3 grid, Dim3 block) {

    long threadsX() {
        return (long) grid.x() * block.x();
    }

    long threadsY() {
        return (long) grid.y() * block.y();
    }

    long threadsZ() {
        return (long) grid.z() * block.z();
    }

    /** Global x indices below {@code bound} that some thread has: the threads a {@code i < bound} guard lets through. */
    int activeX(int bound) {
        return Math.clamp(threadsX(), 0, Math.max(bound, 0));
    }

    /** As {@link #activeX} for the y index. */
    int activeY(int bound) {
        return Math.clamp(threadsY(), 0, Math.max(bound, 0));
    }

    /** How many threads share each global x index, for kernels that use x only. */
    long threadsPerX() {
        return threadsY() * threadsZ();
    }

    /** How many threads share each global (x, y) index, for kernels that use x and y. */
    long threadsPerXY() {
        return threadsZ();
    }
}
