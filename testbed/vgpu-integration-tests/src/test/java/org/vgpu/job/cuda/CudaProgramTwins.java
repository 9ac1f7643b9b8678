package org.vgpu.job.cuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
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
                .register("relax", held(CudaProgramTwins::relax));
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
}
