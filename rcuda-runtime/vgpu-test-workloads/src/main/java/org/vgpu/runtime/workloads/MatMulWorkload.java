package org.vgpu.runtime.workloads;

import java.util.SplittableRandom;

import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * {@code C = A * B} for square matrices, one thread per element. The CPU reference is the textbook
 * triple loop, which sums over k in the same increasing order, so it must agree bit for bit.
 * The default edge is not a multiple of the block edge, so the bounds checks are exercised.
 */
public final class MatMulWorkload implements Workload {
    static final int DEFAULT_EDGE = 100;

    @Override
    public String name() {
        return "matmul";
    }

    @Override
    public String description() {
        return "C = A*B, square, edge 100 per scale unit, one thread per element; exact against the triple loop";
    }

    @Override
    public WorkloadResult run(VirtualGpu gpu, int scale, long seed) {
        int n = Workload.scaled(DEFAULT_EDGE, scale);
        int elements = Math.multiplyExact(n, n);
        SplittableRandom random = new SplittableRandom(seed);
        float[] a = RandomInputs.uniform(random, elements, -1, 1);
        float[] b = RandomInputs.uniform(random, elements, -1, 1);
        var run = DeviceScope.run(gpu, device -> {
            long da = device.upload(a);
            long db = device.upload(b);
            long dc = device.allocate((long) elements * Float.BYTES);
            device.launch2D(
                    TestKernels.MAT_MUL,
                    n,
                    n,
                    KernelArgs.builder()
                            .pointer(da)
                            .pointer(db)
                            .pointer(dc)
                            .i32(n)
                            .build());
            return device.readFloats(dc, elements);
        });
        float[] expected = new float[elements];
        for (int row = 0; row < n; row++) {
            for (int col = 0; col < n; col++) {
                float sum = 0.0f;
                for (int k = 0; k < n; k++) {
                    sum += a[row * n + k] * b[k * n + col];
                }
                expected[row * n + col] = sum;
            }
        }
        return new WorkloadResult(
                name(),
                gpu.backendName(),
                Comparison.exact("C", expected, run.output()),
                run.elapsed(),
                String.format("%d x %d, %d launch", n, n, run.launches()));
    }
}
