package org.vgpu.job.jcuda;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URISyntaxException;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.emulated.EmulatedMemory;
import org.vgpu.runtime.emulated.KernelTwin;
import org.vgpu.runtime.emulated.KernelTwinProvider;
import org.vgpu.runtime.emulated.KernelTwinRegistry;

/**
 * The Java twins of the test JCuda programs' kernels (src/test/resources/jcudaprograms/*.cu and the NVRTC programs'
 * sources; a kernel of C++ linkage by its lowered name), found by the emulation in the programs' JVMs through
 * ServiceLoader.
 *
 * <p>For a migration in the middle of a run, {@value #PAUSE_AT} = N makes the N-th launch of the JVM write {@code
 * paused} into {@value #PAUSE_DIRECTORY} and wait there until the test writes {@code resume}: the program then has
 * state on its vGPU and work still to do, and the migration the test sends meanwhile waits for this launch and
 * holds back the program's next call until the vGPU has moved.
 */
public final class ProgramTwins implements KernelTwinProvider {
    static final String PAUSE_AT = "VGPU_TEST_PAUSE_AT_LAUNCH";
    static final String PAUSE_DIRECTORY = "VGPU_TEST_PAUSE_DIRECTORY";

    private static final ValueLayout.OfFloat FLOAT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong ADDRESS =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final AtomicInteger LAUNCHES = new AtomicInteger();

    @Override
    public void register(KernelTwinRegistry registry) {
        registry.register("add", pausing(ProgramTwins::add))
                .register("reducePartial", pausing(ProgramTwins::reducePartial))
                .register("matMulShared", pausing(ProgramTwins::matMulShared))
                .register("scale", pausing(ProgramTwins::scale))
                .register("polynomial", pausing(ProgramTwins::polynomial))
                .register("saxpyRtc", pausing(ProgramTwins::saxpyRtc))
                .register("heatStep", pausing(ProgramTwins::heatStep))
                .register("sumRows", pausing(ProgramTwins::sumRows))
                .register("heapScratch", pausing(ProgramTwins::heapScratch))
                // the NVRTC programs' kernels of C++ linkage, by their lowered names (as on a GPU)
                .register("_Z5axpyTIfEvT_PS0_S1_i", pausing(ProgramTwins::saxpyRtc)) // the same arithmetic
                .register("_Z5axpyTIiEvT_PS0_S1_i", pausing(ProgramTwins::axpyInt))
                .register("_Z9boxFilterILi1EEvPKfPfi", pausing(boxFilter(1)))
                .register("_Z9boxFilterILi2EEvPKfPfi", pausing(boxFilter(2)))
                .register("_Z6negatePfi", pausing(ProgramTwins::negate));
    }

    private static KernelTwin pausing(KernelTwin twin) {
        return (grid, block, args, memory) -> {
            twin.run(grid, block, args, memory);
            String pauseAt = System.getenv(PAUSE_AT);
            if (pauseAt != null && LAUNCHES.incrementAndGet() == Integer.parseInt(pauseAt)) {
                pause(Path.of(System.getenv(PAUSE_DIRECTORY)));
            }
        };
    }

    private static void pause(Path directory) {
        try {
            Files.writeString(directory.resolve("paused"), "");
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!Files.exists(directory.resolve("resume")) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static long threads(Dim3 grid, Dim3 block) {
        return grid.count() * block.count();
    }

    private static MemorySegment floats(EmulatedMemory memory, long address, long count) {
        return memory.segment(address, count * Float.BYTES);
    }

    /** {@code add(int n, float* a, float* b, float* sum)}. */
    static void add(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(args.i32(0), threads(grid, block));
        MemorySegment a = floats(memory, args.pointer(1), n);
        MemorySegment b = floats(memory, args.pointer(2), n);
        MemorySegment sum = floats(memory, args.pointer(3), n);
        for (int i = 0; i < n; i++) {
            sum.setAtIndex(FLOAT, i, a.getAtIndex(FLOAT, i) + b.getAtIndex(FLOAT, i));
        }
    }

    /** {@code reducePartial(float* in, float* out, int n)}: block b sums its 2 * blockDim.x elements. */
    static void reducePartial(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = args.i32(2);
        long perBlock = 2L * block.x();
        MemorySegment in = floats(memory, args.pointer(0), n);
        MemorySegment out = floats(memory, args.pointer(1), grid.x());
        for (int b = 0; b < grid.x(); b++) {
            float sum = 0;
            for (long i = b * perBlock; i < Math.min(n, (b + 1) * perBlock); i++) {
                sum += in.getAtIndex(FLOAT, i);
            }
            out.setAtIndex(FLOAT, b, sum);
        }
    }

    /** {@code matMulShared(float* a, float* b, float* c, int n)}: the grid covers c, 16 x 16 per block. */
    static void matMulShared(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = args.i32(3);
        MemorySegment a = floats(memory, args.pointer(0), (long) n * n);
        MemorySegment b = floats(memory, args.pointer(1), (long) n * n);
        MemorySegment c = floats(memory, args.pointer(2), (long) n * n);
        int rows = Math.min(n, grid.y() * block.y());
        int cols = Math.min(n, grid.x() * block.x());
        for (int row = 0; row < rows; row++) {
            for (int col = 0; col < cols; col++) {
                float sum = 0;
                for (int k = 0; k < n; k++) {
                    sum += a.getAtIndex(FLOAT, (long) row * n + k) * b.getAtIndex(FLOAT, (long) k * n + col);
                }
                c.setAtIndex(FLOAT, (long) row * n + col, sum);
            }
        }
    }

    /** {@code scale(float* data, float factor, int n)}. */
    static void scale(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(args.i32(2), threads(grid, block));
        float factor = args.f32(1);
        MemorySegment data = floats(memory, args.pointer(0), n);
        for (int i = 0; i < n; i++) {
            data.setAtIndex(FLOAT, i, data.getAtIndex(FLOAT, i) * factor + 1.0f);
        }
    }

    /** {@code polynomial(float* x, float* y, int n)} with {@code __constant__ float coefficients[4]}. */
    static void polynomial(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(args.i32(2), threads(grid, block));
        MemorySegment c = memory.global("coefficients");
        MemorySegment x = floats(memory, args.pointer(0), n);
        MemorySegment y = floats(memory, args.pointer(1), n);
        float c0 = c.getAtIndex(FLOAT, 0);
        float c1 = c.getAtIndex(FLOAT, 1);
        float c2 = c.getAtIndex(FLOAT, 2);
        float c3 = c.getAtIndex(FLOAT, 3);
        for (int i = 0; i < n; i++) {
            float v = x.getAtIndex(FLOAT, i);
            y.setAtIndex(FLOAT, i, c0 + v * (c1 + v * (c2 + v * c3)));
        }
    }

    /** {@code saxpyRtc(float a, float* x, float* y, int n)}, the NVRTC program's kernel. */
    static void saxpyRtc(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(args.i32(3), threads(grid, block));
        float a = args.f32(0);
        MemorySegment x = floats(memory, args.pointer(1), n);
        MemorySegment y = floats(memory, args.pointer(2), n);
        for (int i = 0; i < n; i++) {
            y.setAtIndex(FLOAT, i, a * x.getAtIndex(FLOAT, i) + y.getAtIndex(FLOAT, i));
        }
    }

    /** {@code heatStep(float* in, float* out, int n, float alpha)}. */
    static void heatStep(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(args.i32(2), threads(grid, block));
        float alpha = args.f32(3);
        MemorySegment in = floats(memory, args.pointer(0), n);
        MemorySegment out = floats(memory, args.pointer(1), n);
        for (int i = 0; i < n; i++) {
            float here = in.getAtIndex(FLOAT, i);
            out.setAtIndex(
                    FLOAT,
                    i,
                    i == 0 || i == n - 1
                            ? here
                            : here + alpha * (in.getAtIndex(FLOAT, i - 1) - 2.0f * here + in.getAtIndex(FLOAT, i + 1)));
        }
    }

    /**
     * {@code sumRows(float** rows, float* sums, int rowCount, int columns)}: the rows' addresses are read from the table
     * in device memory, as the kernel reads them.
     */
    static void sumRows(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int rows = (int) Math.min(args.i32(2), threads(grid, block));
        int columns = args.i32(3);
        MemorySegment table = memory.segment(args.pointer(0), (long) rows * Long.BYTES);
        MemorySegment sums = floats(memory, args.pointer(1), rows);
        for (int r = 0; r < rows; r++) {
            MemorySegment row = floats(memory, table.getAtIndex(ADDRESS, r), columns);
            float sum = 0;
            for (int c = 0; c < columns; c++) {
                sum += row.getAtIndex(FLOAT, c);
            }
            sums.setAtIndex(FLOAT, r, sum);
        }
    }

    /** {@code heapScratch(const float* in, float* out, int n)}: in * 2 + 1, which the kernel passes through malloc. */
    static void heapScratch(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(args.i32(2), threads(grid, block));
        MemorySegment in = floats(memory, args.pointer(0), n);
        MemorySegment out = floats(memory, args.pointer(1), n);
        for (int i = 0; i < n; i++) {
            out.setAtIndex(FLOAT, i, in.getAtIndex(FLOAT, i) * 2.0f + 1.0f);
        }
    }

    /** {@code axpyT<int>(int a, int* x, int* y, int n)}. */
    static void axpyInt(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(args.i32(3), threads(grid, block));
        int a = args.i32(0);
        MemorySegment x = memory.segment(args.pointer(1), (long) n * Integer.BYTES);
        MemorySegment y = memory.segment(args.pointer(2), (long) n * Integer.BYTES);
        for (int i = 0; i < n; i++) {
            y.setAtIndex(INT, i, a * x.getAtIndex(INT, i) + y.getAtIndex(INT, i));
        }
    }

    /** {@code boxFilter<RADIUS>(const float* in, float* out, int n)}: the mean of 2 * radius + 1 clamped neighbours. */
    static KernelTwin boxFilter(int radius) {
        return (grid, block, args, memory) -> {
            int n = args.i32(2);
            int threads = (int) Math.min(n, threads(grid, block));
            MemorySegment in = floats(memory, args.pointer(0), n);
            MemorySegment out = floats(memory, args.pointer(1), n);
            for (int i = 0; i < threads; i++) {
                float sum = 0.0f;
                for (int d = -radius; d <= radius; d++) {
                    sum += in.getAtIndex(FLOAT, Math.min(Math.max(i + d, 0), n - 1));
                }
                out.setAtIndex(FLOAT, i, sum / (2 * radius + 1));
            }
        };
    }

    /** {@code negate(float* data, int n)}. */
    static void negate(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory) {
        int n = (int) Math.min(args.i32(1), threads(grid, block));
        MemorySegment data = floats(memory, args.pointer(0), n);
        for (int i = 0; i < n; i++) {
            data.setAtIndex(FLOAT, i, -data.getAtIndex(FLOAT, i));
        }
    }

    /**
     * Writes the emulation's PTX of every test program's .cu file (the test resources' {@code jcudaprograms/NAME.cu},
     * read from the class path, so that it works from any directory) into {@code directory} as NAME.ptx.
     */
    public static void writePtx(Path directory) throws IOException, URISyntaxException {
        Path sources = Path.of(ProgramTwins.class
                        .getResource("/jcudaprograms/vectorAdd.cu")
                        .toURI())
                .getParent();
        try (var files = Files.list(sources)) {
            for (Path cu : files.filter(file -> file.toString().endsWith(".cu")).toList()) {
                String name = cu.getFileName().toString().replaceFirst("\\.cu$", ".ptx");
                Files.writeString(directory.resolve(name), EmulatedNvrtc.declarations(Files.readString(cu)));
            }
        }
    }
}
