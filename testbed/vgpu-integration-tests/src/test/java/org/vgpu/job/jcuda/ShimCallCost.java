package org.vgpu.job.jcuda;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationListener;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.NodeTargetResolver;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.emulated.EmulatedBackend;

/**
 * Not a test: a CPU microbenchmark of what the JCuda shim adds to a 4 KiB synchronous host-to-device copy, on the
 * emulation (so it says nothing about a GPU's own time). One emulated vGPU wrapped as {@code vgpu run} wraps it (a
 * {@link MigratableGpu}); the shim's {@code cuMemcpyHtoD(CUdeviceptr, Pointer.to(byte[]), 4096)}, as a rewritten
 * program calls it, against the vGPU's {@code memcpyHtoD} of the same array, as vgpu's {@code bench} calls it.
 *
 * <p>First the cold phase as {@code jcudaprograms.JCudaCallCost} meets it (its 4000 copies, the first ones of the
 * JVM), then rounds of interleaved pairs once both paths are compiled. Prints medians per call in ns. Run it with
 * {@code java -cp <vgpu-integration-tests' test class path> org.vgpu.job.jcuda.ShimCallCost [rounds [shim|direct]]}
 * (the second argument picks the path of the cold phase).
 */
public final class ShimCallCost {
    private static final int BYTES = 4096;
    private static final int COLD_COPIES = 4000;
    private static final int COPIES_PER_ROUND = 20_000;

    private ShimCallCost() {}

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        boolean coldDirect = args.length > 1 && args[1].equals("direct");
        EmulatedBackend backend = Backends.emulated(1);
        try (MigratableGpu gpu = new MigratableGpu(
                backend.open(0, VaWindow.forVgpu(0)),
                new MigrationTarget.LocalGpu(0),
                new NodeTargetResolver(backend),
                MigrationListener.NONE)) {
            JCudaSession.install(List.of(gpu));
            CUdeviceptr device = new CUdeviceptr();
            JCudaDriverShim.cuMemAlloc(device, BYTES);
            long address = JCudaObjects.deviceAddress(device);
            byte[] host = new byte[BYTES];

            long[] cold = new long[COLD_COPIES];
            for (int i = 0; i < COLD_COPIES; i++) {
                long start = System.nanoTime();
                if (coldDirect) {
                    gpu.memcpyHtoD(address, MemorySegment.ofArray(host), BYTES);
                } else {
                    JCudaDriverShim.cuMemcpyHtoD(device, Pointer.to(host), BYTES);
                }
                cold[i] = System.nanoTime() - start;
            }
            System.out.printf(
                    "emulation, cold (the JVM's first %d copies, as JCudaCallCost times them): %s %d ns per copy%n",
                    COLD_COPIES, coldDirect ? "VirtualGpu.memcpyHtoD" : "shim", median(cold));

            long[] shim = new long[COPIES_PER_ROUND];
            long[] direct = new long[COPIES_PER_ROUND];
            for (int round = 1; round <= rounds; round++) {
                for (int i = 0; i < COPIES_PER_ROUND; i++) {
                    long start = System.nanoTime();
                    JCudaDriverShim.cuMemcpyHtoD(device, Pointer.to(host), BYTES);
                    long between = System.nanoTime();
                    gpu.memcpyHtoD(address, MemorySegment.ofArray(host), BYTES);
                    long end = System.nanoTime();
                    shim[i] = between - start;
                    direct[i] = end - between;
                }
                long shimNanos = median(shim);
                long directNanos = median(direct);
                System.out.printf(
                        "emulation, round %d (%d interleaved pairs): shim %d ns, VirtualGpu.memcpyHtoD %d ns per copy;"
                                + " the shim adds %d ns%n",
                        round, COPIES_PER_ROUND, shimNanos, directNanos, shimNanos - directNanos);
            }
        }
    }

    private static long median(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
