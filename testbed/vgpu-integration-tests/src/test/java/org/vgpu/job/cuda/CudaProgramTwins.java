package org.vgpu.job.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.emulated.EmulatedMemory;
import org.vgpu.runtime.emulated.KernelTwin;
import org.vgpu.runtime.emulated.KernelTwinProvider;
import org.vgpu.runtime.emulated.KernelTwinRegistry;

/**
 * The Java twins of the CUDA test programs' PTX kernels (rcuda-runtime/vgpu-libcuda/tests/programs), for the
 * emulation that serves them in the launcher, which runs in the test's JVM: a test can hold a launch
 * ({@link #holdLaunch}) to move the vGPU while the program has state on it and work still to do.
 */
public final class CudaProgramTwins implements KernelTwinProvider {
    private static final ValueLayout.OfFloat FLOAT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final AtomicInteger LAUNCHES = new AtomicInteger();
    private static volatile Hold hold;

    /** The {@code launch}-th launch from now waits, once it has run, until {@link Hold#release}. */
    public static Hold holdLaunch(int launch) {
        LAUNCHES.set(0);
        hold = new Hold(launch);
        return hold;
    }

    /** A held launch: reached when the program has launched that many kernels. */
    public static final class Hold {
        private final int launch;
        private final CountDownLatch reached = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);

        private Hold(int launch) {
            this.launch = launch;
        }

        public boolean awaitReached(long seconds) throws InterruptedException {
            return reached.await(seconds, TimeUnit.SECONDS);
        }

        public void release() {
            released.countDown();
        }

        private void atLaunch(int count) {
            if (count != launch) {
                return;
            }
            reached.countDown();
            try {
                released.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void register(KernelTwinRegistry registry) {
        registry.register("offset_saxpy", held(CudaProgramTwins::offsetSaxpy))
                .register("relax", held(CudaProgramTwins::relax))
                .register("_Z10polynomialPKfPfi", held(CudaProgramTwins::polynomial))
                .register("_Z10fill_indexPii", held(CudaProgramTwins::fillIndex))
                .register("_Z5scalePffi", held(CudaProgramTwins::scale))
                .register("_Z10block_sumsPKfPfi", held(CudaProgramTwins::blockSums))
                .register("_Z4axpyfPKfPfi", held(CudaProgramTwins::axpy))
                .register("_Z9tile_sumsPKfPfi", held(CudaProgramTwins::blockSums));
    }

    private static KernelTwin held(KernelTwin twin) {
        return (grid, block, args, memory) -> {
            twin.run(grid, block, args, memory);
            Hold current = hold;
            if (current != null) {
                current.atLaunch(LAUNCHES.incrementAndGet());
            }
        };
    }

    /** {@code offset_saxpy(float* x, float* y, float a, unsigned n)}: y = a x + y + the module's {@code offset}. */
    static void offsetSaxpy(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(Integer.toUnsignedLong(args.i32(3)), grid.count() * block.count());
        MemorySegment x = memory.segment(args.pointer(0), (long) n * Float.BYTES);
        MemorySegment y = memory.segment(args.pointer(1), (long) n * Float.BYTES);
        float a = args.f32(2);
        float offset = memory.global("offset").get(FLOAT, 0);
        for (int i = 0; i < n; i++) {
            y.setAtIndex(FLOAT, i, Math.fma(a, x.getAtIndex(FLOAT, i), y.getAtIndex(FLOAT, i)) + offset);
        }
    }

    /** {@code relax(float* state, unsigned step, unsigned n)}: state[i] = state[i] / 2 + (i % 7 + step). */
    static void relax(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(Integer.toUnsignedLong(args.i32(2)), grid.count() * block.count());
        int step = args.i32(1);
        MemorySegment state = memory.segment(args.pointer(0), (long) n * Float.BYTES);
        for (int i = 0; i < n; i++) {
            state.setAtIndex(FLOAT, i, Math.fma(state.getAtIndex(FLOAT, i), 0.5f, (float) (i % 7 + step)));
        }
    }

    // runtime_tour (runtime_tour.cu and more_kernels.cu): C++ kernels, registered by their mangled names

    /**
     * {@code polynomial(const float* x, float* y, int n)}: y = the module's {@code coefficients} evaluated at x, as the
     * GPU evaluates it (Horner's rule in fused multiply-adds); thread 0 adds one to {@code launches_seen}.
     */
    static void polynomial(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = threads(grid, block, args.i32(2));
        MemorySegment x = memory.segment(args.pointer(0), (long) n * Float.BYTES);
        MemorySegment y = memory.segment(args.pointer(1), (long) n * Float.BYTES);
        MemorySegment c = memory.global("coefficients");
        for (int i = 0; i < n; i++) {
            y.setAtIndex(
                    FLOAT,
                    i,
                    horner(
                            c.getAtIndex(FLOAT, 0),
                            c.getAtIndex(FLOAT, 1),
                            c.getAtIndex(FLOAT, 2),
                            c.getAtIndex(FLOAT, 3),
                            x.getAtIndex(FLOAT, i)));
        }
        MemorySegment seen = memory.global("launches_seen");
        seen.set(INT, 0, seen.get(INT, 0) + 1);
    }

    /** ((c3 v + c2) v + c1) v + c0 in fused multiply-adds, as nvcc compiles it. */
    private static float horner(float c0, float c1, float c2, float c3, float v) {
        return Math.fma(Math.fma(Math.fma(c3, v, c2), v, c1), v, c0);
    }

    /** {@code fill_index(int* out, int n)}: out[i] = 3 i + 1. */
    static void fillIndex(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = threads(grid, block, args.i32(1));
        MemorySegment out = memory.segment(args.pointer(0), (long) n * Integer.BYTES);
        for (int i = 0; i < n; i++) {
            out.setAtIndex(INT, i, i * 3 + 1);
        }
    }

    /** {@code scale(float* values, float factor, int n)}: values[i] *= factor. */
    static void scale(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = threads(grid, block, args.i32(2));
        float factor = args.f32(1);
        MemorySegment values = memory.segment(args.pointer(0), (long) n * Float.BYTES);
        for (int i = 0; i < n; i++) {
            values.setAtIndex(FLOAT, i, values.getAtIndex(FLOAT, i) * factor);
        }
    }

    // launch_tour (launch_tour.cu): tile_sums is block_sums in dynamic shared memory

    /** {@code axpy(float a, const float* x, float* y, int n)}: y = a x + y (a fused multiply-add), whatever the grid. */
    static void axpy(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = args.i32(3);
        float a = args.f32(0);
        MemorySegment x = memory.segment(args.pointer(1), (long) n * Float.BYTES);
        MemorySegment y = memory.segment(args.pointer(2), (long) n * Float.BYTES);
        for (int i = 0; i < n; i++) {
            y.setAtIndex(FLOAT, i, Math.fma(a, x.getAtIndex(FLOAT, i), y.getAtIndex(FLOAT, i)));
        }
    }

    /** {@code block_sums(const float* values, float* sums, int n)}: each block's sum, in the kernel's tree order. */
    static void blockSums(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = args.i32(2);
        int width = block.x();
        MemorySegment values = memory.segment(args.pointer(0), (long) Math.min(n, grid.x() * width) * Float.BYTES);
        MemorySegment sums = memory.segment(args.pointer(1), (long) grid.x() * Float.BYTES);
        float[] partial = new float[width];
        for (int b = 0; b < grid.x(); b++) {
            for (int t = 0; t < width; t++) {
                int i = b * width + t;
                partial[t] = i < n ? values.getAtIndex(FLOAT, i) : 0.0f;
            }
            sums.setAtIndex(FLOAT, b, treeSum(partial));
        }
    }

    /** The sum of {@code partial} as a block adds it: halves folded onto the first, stride by stride. */
    private static float treeSum(float[] partial) {
        float[] sums = Arrays.copyOf(partial, partial.length);
        for (int stride = sums.length / 2; stride > 0; stride /= 2) {
            for (int t = 0; t < stride; t++) {
                sums[t] += sums[t + stride];
            }
        }
        return sums[0];
    }

    /** The elements a launch covers: {@code n}, or fewer when the grid has fewer threads. */
    private static int threads(Dim3 grid, Dim3 block, int n) {
        return (int) Math.min(n, grid.count() * block.count());
    }
}
