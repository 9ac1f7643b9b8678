package org.vgpu.runtime.workloads;

import java.util.SplittableRandom;

import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/** {@code y = a * x + y}; the kernel is built without fused multiply-add, so the CPU loop must agree bit for bit. */
public final class SaxpyWorkload implements Workload {
    static final int DEFAULT_LENGTH = 1 << 16;

    @Override
    public String name() {
        return "saxpy";
    }

    @Override
    public String description() {
        return "y = a*x + y on 65 536 floats per scale unit; exact against a CPU loop (no FMA on either side)";
    }

    @Override
    public WorkloadResult run(VirtualGpu gpu, int scale, long seed) {
        int n = Workload.scaled(DEFAULT_LENGTH, scale);
        SplittableRandom random = new SplittableRandom(seed);
        float a = -2 + 4 * random.nextFloat();
        float[] x = RandomInputs.uniform(random, n, -1, 1);
        float[] y = RandomInputs.uniform(random, n, -1, 1);
        var run = DeviceScope.run(gpu, device -> {
            long dx = device.upload(x);
            long dy = device.upload(y);
            device.launch1D(
                    TestKernels.SAXPY,
                    n,
                    KernelArgs.builder().i32(n).f32(a).pointer(dx).pointer(dy).build());
            return device.readFloats(dy, n);
        });
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            expected[i] = a * x[i] + y[i];
        }
        return new WorkloadResult(
                name(),
                gpu.backendName(),
                Comparison.exact("y", expected, run.output()),
                run.elapsed(),
                String.format("%d floats, a = %s, %d launch", n, a, run.launches()));
    }
}
