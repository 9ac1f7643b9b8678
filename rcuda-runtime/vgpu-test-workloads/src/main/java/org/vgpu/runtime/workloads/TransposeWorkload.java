package org.vgpu.runtime.workloads;

import java.util.SplittableRandom;

import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/** Transpose of a non-square matrix whose sides are not multiples of the block edge; a pure copy, so exact. */
public final class TransposeWorkload implements Workload {
    static final int DEFAULT_ROWS = 300;
    static final int DEFAULT_COLUMNS = 200;

    @Override
    public String name() {
        return "transpose";
    }

    @Override
    public String description() {
        return "transpose of a 300 x 200 matrix (each side times the scale); exact";
    }

    @Override
    public WorkloadResult run(VirtualGpu gpu, int scale, long seed) {
        int rows = Workload.scaled(DEFAULT_ROWS, scale);
        int cols = Workload.scaled(DEFAULT_COLUMNS, scale);
        int elements = Math.multiplyExact(rows, cols);
        float[] in = RandomInputs.uniform(new SplittableRandom(seed), elements, -1000, 1000);
        var run = DeviceScope.run(gpu, device -> {
            long din = device.upload(in);
            long dout = device.allocate((long) elements * Float.BYTES);
            device.launch2D(
                    TestKernels.TRANSPOSE,
                    cols,
                    rows,
                    KernelArgs.builder()
                            .pointer(din)
                            .pointer(dout)
                            .i32(rows)
                            .i32(cols)
                            .build());
            return device.readFloats(dout, elements);
        });
        float[] expected = new float[elements];
        for (int row = 0; row < rows; row++) {
            for (int col = 0; col < cols; col++) {
                expected[col * rows + row] = in[row * cols + col];
            }
        }
        return new WorkloadResult(
                name(),
                gpu.backendName(),
                Comparison.exact("out", expected, run.output()),
                run.elapsed(),
                String.format("%d x %d -> %d x %d, %d launch", rows, cols, cols, rows, run.launches()));
    }
}
