package org.vgpu.runtime.workloads;

import java.util.SplittableRandom;

import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/** {@code c = a + b}; one rounding per element, so the CPU loop must agree bit for bit. */
public final class VectorAddWorkload implements Workload {
    static final int DEFAULT_LENGTH = 1 << 16;

    @Override
    public String name() {
        return "vector-add";
    }

    @Override
    public String description() {
        return "c = a + b on 65 536 floats per scale unit; exact against a CPU loop";
    }

    @Override
    public WorkloadResult run(VirtualGpu gpu, int scale, long seed) {
        int n = Workload.scaled(DEFAULT_LENGTH, scale);
        SplittableRandom random = new SplittableRandom(seed);
        float[] a = RandomInputs.uniform(random, n, -1, 1);
        float[] b = RandomInputs.uniform(random, n, -1, 1);
        var run = DeviceScope.run(gpu, device -> {
            long da = device.upload(a);
            long db = device.upload(b);
            long dc = device.allocate((long) n * Float.BYTES);
            device.launch1D(
                    TestKernels.VECTOR_ADD,
                    n,
                    KernelArgs.builder()
                            .pointer(da)
                            .pointer(db)
                            .pointer(dc)
                            .i32(n)
                            .build());
            return device.readFloats(dc, n);
        });
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            expected[i] = a[i] + b[i];
        }
        return new WorkloadResult(
                name(),
                gpu.backendName(),
                Comparison.exact("c", expected, run.output()),
                run.elapsed(),
                n + " floats, " + run.launches() + " launch");
    }
}
