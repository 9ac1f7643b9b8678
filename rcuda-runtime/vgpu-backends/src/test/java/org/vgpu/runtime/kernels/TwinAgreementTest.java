package org.vgpu.runtime.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * Proof that every twin is the kernel: the same inputs run through the PTX on a real GPU (native
 * backend) and through the twin (CPU emulation), and every byte of every buffer must be equal
 * afterwards, outputs and untouched sentinels alike. Inputs are random and sized off the block
 * size, so bounds checks, rounding of every kind (wide exponent ranges, subnormals) and the
 * thread-to-element mapping are all exercised. Allocation addresses are the same on both
 * backends (the window allocator is deterministic), which the pointer-chasing case relies on.
 */
@Tag("gpu")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TwinAgreementTest {
    private static final long SEED = 20_251_121L;
    private static final int BLOCK = 128;

    private GpuBackend gpuBackend;
    private GpuBackend emulation;

    /** One agreement case: the kernels it launches and what it does on a device. */
    record Case(String name, Set<String> kernels, Scenario scenario) {
        @Override
        public String toString() {
            return name;
        }
    }

    @FunctionalInterface
    interface Scenario {
        void run(Device device, SplittableRandom random);
    }

    @BeforeAll
    void openBackends() {
        gpuBackend = Backends.open("native");
        emulation = Backends.emulated();
    }

    @AfterAll
    void closeBackends() {
        gpuBackend.close();
        emulation.close();
    }

    @Test
    void everyKernelHasAnAgreementCase() {
        Set<String> covered = new HashSet<>();
        cases().forEach(c -> covered.addAll(c.kernels()));
        assertEquals(Set.copyOf(TestKernels.kernelNames()), covered);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void gpuAndTwinProduceTheSameBytes(Case agreementCase) {
        Outcome onGpu = runOn(gpuBackend, agreementCase);
        Outcome onTwin = runOn(emulation, agreementCase);
        assertEquals(agreementCase.kernels(), onGpu.launched(), "kernels the case launched");
        assertEquals(onGpu.buffers().size(), onTwin.buffers().size());
        for (int i = 0; i < onGpu.buffers().size(); i++) {
            Buffer gpu = onGpu.buffers().get(i);
            Buffer twin = onTwin.buffers().get(i);
            assertEquals(
                    gpu.address(),
                    twin.address(),
                    String.format(
                            "buffer %d is at 0x%x on the GPU and 0x%x in the emulation; stored pointers would differ",
                            i, gpu.address(), twin.address()));
            compare(agreementCase.name(), i, gpu, twin);
        }
    }

    static Stream<Case> cases() {
        return Stream.of(
                new Case(
                        "emptyKernel",
                        Set.of(TestKernels.EMPTY_KERNEL),
                        (device, random) -> device.launch(
                                TestKernels.EMPTY_KERNEL, new Dim3(4, 2, 1), Dim3.of(BLOCK), KernelArgs.none())),
                new Case("vectorAdd", Set.of(TestKernels.VECTOR_ADD), (device, random) -> {
                    int n = 10_007;
                    long a = device.upload(wideFloats(random, n));
                    long b = device.upload(wideFloats(random, n));
                    long c = device.allocate((n + 9) * 4L, Element.FLOAT);
                    device.launch1D(
                            TestKernels.VECTOR_ADD,
                            n,
                            KernelArgs.builder()
                                    .pointer(a)
                                    .pointer(b)
                                    .pointer(c)
                                    .i32(n)
                                    .build());
                }),
                new Case("saxpy", Set.of(TestKernels.SAXPY), (device, random) -> {
                    int n = 10_007;
                    long x = device.upload(wideFloats(random, n));
                    long y = device.upload(wideFloats(random, n + 9));
                    device.launch1D(
                            TestKernels.SAXPY,
                            n,
                            KernelArgs.builder()
                                    .i32(n)
                                    .f32(1.1f + random.nextFloat())
                                    .pointer(x)
                                    .pointer(y)
                                    .build());
                }),
                new Case("matMul", Set.of(TestKernels.MAT_MUL), (device, random) -> {
                    int n = 77;
                    long a = device.upload(uniform(random, n * n, -1, 1));
                    long b = device.upload(uniform(random, n * n, -1, 1));
                    long c = device.allocate((long) n * n * 4, Element.FLOAT);
                    device.launch2D(
                            TestKernels.MAT_MUL,
                            n,
                            n,
                            KernelArgs.builder()
                                    .pointer(a)
                                    .pointer(b)
                                    .pointer(c)
                                    .i32(n)
                                    .build());
                }),
                new Case(
                        "transpose of random bit patterns (NaN payloads, subnormals)",
                        Set.of(TestKernels.TRANSPOSE),
                        (device, random) -> {
                            int rows = 130;
                            int cols = 67;
                            int[] bits = new int[rows * cols];
                            for (int i = 0; i < bits.length; i++) {
                                bits[i] = random.nextInt();
                            }
                            long in = device.upload(bits);
                            long out = device.allocate((long) rows * cols * 4, Element.FLOAT);
                            device.launch2D(
                                    TestKernels.TRANSPOSE,
                                    cols,
                                    rows,
                                    KernelArgs.builder()
                                            .pointer(in)
                                            .pointer(out)
                                            .i32(rows)
                                            .i32(cols)
                                            .build());
                        }),
                new Case(
                        "nbodyStep and nbodyIntegrate, 3 steps",
                        Set.of(TestKernels.NBODY_STEP, TestKernels.NBODY_INTEGRATE),
                        (device, random) -> {
                            int n = 700;
                            float[] pos = new float[4 * n];
                            for (int i = 0; i < n; i++) {
                                pos[4 * i] = -1 + 2 * random.nextFloat();
                                pos[4 * i + 1] = -1 + 2 * random.nextFloat();
                                pos[4 * i + 2] = -1 + 2 * random.nextFloat();
                                pos[4 * i + 3] = random.nextFloat() / n;
                            }
                            long dpos = device.upload(pos);
                            long dvel = device.upload(uniform(random, 3 * n, -0.1f, 0.1f));
                            for (int step = 0; step < 3; step++) {
                                device.launch1D(
                                        TestKernels.NBODY_STEP,
                                        n,
                                        KernelArgs.builder()
                                                .pointer(dpos)
                                                .pointer(dvel)
                                                .i32(n)
                                                .f32(0.01f)
                                                .f32(0.0025f)
                                                .build());
                                device.launch1D(
                                        TestKernels.NBODY_INTEGRATE,
                                        n,
                                        KernelArgs.builder()
                                                .pointer(dpos)
                                                .pointer(dvel)
                                                .i32(n)
                                                .f32(0.01f)
                                                .build());
                            }
                        }),
                new Case(
                        "swAntiDiagonal over the whole matrix",
                        Set.of(TestKernels.SW_ANTI_DIAGONAL),
                        (device, random) -> {
                            int lenA = 300;
                            int lenB = 211;
                            long seqA = device.upload(bases(random, lenA));
                            long seqB = device.upload(bases(random, lenB));
                            long h = device.allocate((lenA + 1L) * (lenB + 1) * 4, Element.INT);
                            device.memsetZero(h, (lenA + 1L) * (lenB + 1) * 4);
                            for (int diag = 2; diag <= lenA + lenB; diag++) {
                                device.launch1D(
                                        TestKernels.SW_ANTI_DIAGONAL,
                                        Math.min(lenA, diag - 1) - Math.max(1, diag - lenB) + 1,
                                        KernelArgs.builder()
                                                .pointer(seqA)
                                                .pointer(seqB)
                                                .pointer(h)
                                                .i32(lenA)
                                                .i32(lenB)
                                                .i32(diag)
                                                .i32(3)
                                                .i32(-3)
                                                .i32(2)
                                                .build());
                            }
                        }),
                new Case("ljForces on a jittered lattice", Set.of(TestKernels.LJ_FORCES), (device, random) -> {
                    LennardJonesBox box = LennardJonesBox.jitteredLattice(random, 5);
                    long pos = device.upload(box.positions());
                    long force = device.allocate(3L * box.atoms() * 4, Element.FLOAT);
                    long potential = device.allocate(box.atoms() * 4L, Element.FLOAT);
                    device.launch1D(TestKernels.LJ_FORCES, box.atoms(), box.forceArgs(pos, force, potential));
                }),
                new Case("ljInitialIntegrate", Set.of(TestKernels.LJ_INITIAL_INTEGRATE), (device, random) -> {
                    int n = 1_001;
                    long pos = device.upload(uniform(random, 3 * n, 0, 8));
                    long vel = device.upload(uniform(random, 3 * n, -3, 3));
                    long force = device.upload(wideFloats(random, 3 * n));
                    device.launch1D(
                            TestKernels.LJ_INITIAL_INTEGRATE,
                            n,
                            KernelArgs.builder()
                                    .pointer(pos)
                                    .pointer(vel)
                                    .pointer(force)
                                    .i32(n)
                                    .f32(0.0025f)
                                    .f32(0.005f)
                                    .build());
                }),
                new Case(
                        "ljApplyPeriodic at and around the box faces",
                        Set.of(TestKernels.LJ_APPLY_PERIODIC),
                        (device, random) -> {
                            int n = 1_001;
                            float box = 8.4f;
                            float[] pos = uniform(random, 3 * n, -0.5f, box + 0.5f);
                            float[] edges = {
                                0, -0.0f, box, Math.nextDown(box), Math.nextUp(box), -1e-8f, -Float.MIN_VALUE, -box
                            };
                            System.arraycopy(edges, 0, pos, 0, edges.length);
                            long dpos = device.upload(pos);
                            device.launch1D(
                                    TestKernels.LJ_APPLY_PERIODIC,
                                    n,
                                    KernelArgs.builder()
                                            .pointer(dpos)
                                            .i32(n)
                                            .f32(box)
                                            .build());
                        }),
                new Case("ljFinalIntegrate", Set.of(TestKernels.LJ_FINAL_INTEGRATE), (device, random) -> {
                    int n = 1_001;
                    long vel = device.upload(uniform(random, 3 * n, -3, 3));
                    long force = device.upload(wideFloats(random, 3 * n));
                    device.launch1D(
                            TestKernels.LJ_FINAL_INTEGRATE,
                            n,
                            KernelArgs.builder()
                                    .pointer(vel)
                                    .pointer(force)
                                    .i32(n)
                                    .f32(0.0025f)
                                    .build());
                }),
                new Case("ljKineticEnergy", Set.of(TestKernels.LJ_KINETIC_ENERGY), (device, random) -> {
                    int n = 1_001;
                    long vel = device.upload(wideFloats(random, 3 * n));
                    long kinetic = device.allocate(n * 4L, Element.FLOAT);
                    device.launch1D(
                            TestKernels.LJ_KINETIC_ENERGY,
                            n,
                            KernelArgs.builder()
                                    .pointer(vel)
                                    .pointer(kinetic)
                                    .i32(n)
                                    .build());
                }),
                new Case(
                        "Lennard-Jones, 10 velocity-Verlet steps",
                        Set.of(
                                TestKernels.LJ_FORCES,
                                TestKernels.LJ_INITIAL_INTEGRATE,
                                TestKernels.LJ_APPLY_PERIODIC,
                                TestKernels.LJ_FINAL_INTEGRATE,
                                TestKernels.LJ_KINETIC_ENERGY),
                        (device, random) -> {
                            LennardJonesBox box = LennardJonesBox.jitteredLattice(random, 4);
                            int n = box.atoms();
                            long pos = device.upload(box.positions());
                            long vel = device.upload(uniform(random, 3 * n, -2, 2));
                            long force = device.allocate(3L * n * 4, Element.FLOAT);
                            long potential = device.allocate(n * 4L, Element.FLOAT);
                            long kinetic = device.allocate(n * 4L, Element.FLOAT);
                            device.launch1D(TestKernels.LJ_FORCES, n, box.forceArgs(pos, force, potential));
                            for (int step = 0; step < 10; step++) {
                                device.launch1D(
                                        TestKernels.LJ_INITIAL_INTEGRATE,
                                        n,
                                        KernelArgs.builder()
                                                .pointer(pos)
                                                .pointer(vel)
                                                .pointer(force)
                                                .i32(n)
                                                .f32(0.0025f)
                                                .f32(0.005f)
                                                .build());
                                device.launch1D(
                                        TestKernels.LJ_APPLY_PERIODIC,
                                        n,
                                        KernelArgs.builder()
                                                .pointer(pos)
                                                .i32(n)
                                                .f32(box.edge())
                                                .build());
                                device.launch1D(TestKernels.LJ_FORCES, n, box.forceArgs(pos, force, potential));
                                device.launch1D(
                                        TestKernels.LJ_FINAL_INTEGRATE,
                                        n,
                                        KernelArgs.builder()
                                                .pointer(vel)
                                                .pointer(force)
                                                .i32(n)
                                                .f32(0.0025f)
                                                .build());
                                device.launch1D(
                                        TestKernels.LJ_KINETIC_ENERGY,
                                        n,
                                        KernelArgs.builder()
                                                .pointer(vel)
                                                .pointer(kinetic)
                                                .i32(n)
                                                .build());
                            }
                        }),
                new Case("pointerChase through 3 allocations", Set.of(TestKernels.POINTER_CHASE), (device, random) -> {
                    int perAllocation = 1_700;
                    int nodes = 3 * perAllocation;
                    long[] base = new long[3];
                    for (int a = 0; a < 3; a++) {
                        base[a] = device.allocate(perAllocation * 16L, Element.LONG);
                    }
                    long[] address = new long[nodes];
                    for (int k = 0; k < nodes; k++) {
                        address[k] = base[k % 3] + (k / 3) * 16L;
                    }
                    long[][] images = new long[3][2 * perAllocation];
                    for (int k = 0; k < nodes; k++) {
                        images[k % 3][2 * (k / 3)] = address[random.nextInt(nodes)];
                        images[k % 3][2 * (k / 3) + 1] = random.nextLong();
                    }
                    for (int a = 0; a < 3; a++) {
                        device.write(base[a], images[a]);
                    }
                    long starts = device.upload(address);
                    long payloads = device.allocate(nodes * 8L, Element.LONG);
                    device.launch1D(
                            TestKernels.POINTER_CHASE,
                            nodes,
                            KernelArgs.builder()
                                    .pointer(starts)
                                    .pointer(payloads)
                                    .i32(nodes)
                                    .i32(50)
                                    .build());
                }));
    }

    // ---- running and comparing

    record Buffer(long address, Element element, byte[] bytes) {}

    record Outcome(List<Buffer> buffers, Set<String> launched) {}

    enum Element {
        BYTE(1),
        INT(4),
        FLOAT(4),
        LONG(8);

        final int size;

        Element(int size) {
            this.size = size;
        }

        String describe(byte[] bytes, int index) {
            MemorySegment all = MemorySegment.ofArray(bytes);
            long offset = (long) index * size;
            return switch (this) {
                case BYTE -> Byte.toString(bytes[index]);
                case INT -> Integer.toString(all.get(LE_INT, offset));
                case FLOAT -> {
                    int raw = all.get(LE_INT, offset);
                    yield Float.intBitsToFloat(raw) + String.format(" (0x%08x)", raw);
                }
                case LONG -> String.format("0x%016x", all.get(LE_LONG, offset));
            };
        }
    }

    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static Outcome runOn(GpuBackend backend, Case agreementCase) {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            Device device = new Device(gpu);
            agreementCase.scenario().run(device, new SplittableRandom(SEED));
            gpu.ctxSynchronize();
            return new Outcome(device.readAll(), device.launched);
        }
    }

    private static void compare(String caseName, int index, Buffer gpu, Buffer twin) {
        byte[] expected = gpu.bytes();
        byte[] actual = twin.bytes();
        int size = gpu.element().size;
        int firstDifference = -1;
        int differences = 0;
        for (int element = 0; element < expected.length / size; element++) {
            for (int b = element * size; b < (element + 1) * size; b++) {
                if (expected[b] != actual[b]) {
                    firstDifference = firstDifference < 0 ? element : firstDifference;
                    differences++;
                    break;
                }
            }
        }
        if (differences > 0) {
            fail(String.format(
                    "%s: buffer %d (%s at 0x%x) differs in %d of %d elements; first at index %d: GPU %s, twin %s",
                    caseName,
                    index,
                    gpu.element(),
                    gpu.address(),
                    differences,
                    expected.length / size,
                    firstDifference,
                    gpu.element().describe(expected, firstDifference),
                    gpu.element().describe(actual, firstDifference)));
        }
    }

    /** Allocates, fills and launches on one vGPU, remembering every buffer to read it back. */
    static final class Device {
        /** Fill of every new allocation, so bytes no thread writes compare equal and stray writes show. */
        private static final byte SENTINEL = 0x5a;

        private final VirtualGpu gpu;
        private final ModuleHandle module;
        private final List<long[]> allocations = new ArrayList<>();
        private final List<Element> elements = new ArrayList<>();
        private final Set<String> launched = new HashSet<>();

        Device(VirtualGpu gpu) {
            this.gpu = gpu;
            this.module = gpu.moduleLoadData(TestKernels.ptx());
        }

        long allocate(long bytes, Element element) {
            long address = gpu.memAlloc(bytes);
            gpu.memsetD8(address, SENTINEL, bytes);
            allocations.add(new long[] {address, bytes});
            elements.add(element);
            return address;
        }

        void memsetZero(long address, long bytes) {
            gpu.memsetD8(address, (byte) 0, bytes);
        }

        long upload(float[] values) {
            return upload(MemorySegment.ofArray(values), Element.FLOAT);
        }

        long upload(int[] values) {
            return upload(MemorySegment.ofArray(values), Element.INT);
        }

        long upload(long[] values) {
            return upload(MemorySegment.ofArray(values), Element.LONG);
        }

        long upload(byte[] values) {
            return upload(MemorySegment.ofArray(values), Element.BYTE);
        }

        private long upload(MemorySegment host, Element element) {
            long address = allocate(host.byteSize(), element);
            gpu.memcpyHtoD(address, host, host.byteSize());
            return address;
        }

        void write(long address, long[] values) {
            gpu.memcpyHtoD(address, MemorySegment.ofArray(values), values.length * 8L);
        }

        void launch(String kernel, Dim3 grid, Dim3 block, KernelArgs args) {
            gpu.launchKernel(gpu.moduleGetFunction(module, kernel), grid, block, 0, StreamHandle.DEFAULT, args);
            launched.add(kernel);
        }

        void launch1D(String kernel, int threads, KernelArgs args) {
            launch(kernel, Dim3.of((threads + BLOCK - 1) / BLOCK), Dim3.of(BLOCK), args);
        }

        void launch2D(String kernel, int columns, int rows, KernelArgs args) {
            launch(kernel, Dim3.of((columns + 15) / 16, (rows + 15) / 16), Dim3.of(16, 16), args);
        }

        List<Buffer> readAll() {
            List<Buffer> buffers = new ArrayList<>();
            for (int i = 0; i < allocations.size(); i++) {
                long address = allocations.get(i)[0];
                byte[] bytes = new byte[Math.toIntExact(allocations.get(i)[1])];
                gpu.memcpyDtoH(MemorySegment.ofArray(bytes), address, bytes.length);
                buffers.add(new Buffer(address, elements.get(i), bytes));
            }
            return buffers;
        }
    }

    // ---- inputs

    /** A Lennard-Jones configuration: fcc lattice at density 0.8442 with random displacements, wrapped into the box. */
    record LennardJonesBox(float[] positions, float edge) {
        static final float CUTOFF = 2.5f;
        /** The pair energy at the cutoff, 4 (rc^-12 - rc^-6). */
        static final float ENERGY_SHIFT = (float) (4 * (Math.pow(CUTOFF, -12) - Math.pow(CUTOFF, -6)));

        static LennardJonesBox jitteredLattice(SplittableRandom random, int cells) {
            double spacing = Math.cbrt(4 / 0.8442);
            float edge = (float) (cells * spacing);
            double[][] basis = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
            float[] pos = new float[3 * 4 * cells * cells * cells];
            int k = 0;
            for (int x = 0; x < cells; x++) {
                for (int y = 0; y < cells; y++) {
                    for (int z = 0; z < cells; z++) {
                        for (double[] offset : basis) {
                            int[] cell = {x, y, z};
                            for (int d = 0; d < 3; d++) {
                                double jitter = 0.15 * (random.nextDouble() - 0.5);
                                float wrapped = (float) (((cell[d] + offset[d]) * spacing + jitter + edge) % edge);
                                pos[k++] = wrapped < edge ? wrapped : 0;
                            }
                        }
                    }
                }
            }
            return new LennardJonesBox(pos, edge);
        }

        int atoms() {
            return positions.length / 3;
        }

        KernelArgs forceArgs(long pos, long force, long potential) {
            return KernelArgs.builder()
                    .pointer(pos)
                    .pointer(force)
                    .pointer(potential)
                    .i32(atoms())
                    .f32(edge)
                    .f32(CUTOFF * CUTOFF)
                    .f32(ENERGY_SHIFT)
                    .build();
        }
    }

    private static float[] uniform(SplittableRandom random, int count, float low, float high) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = low + (high - low) * random.nextFloat();
        }
        return values;
    }

    /** Signed values over 2^-140 .. 2^40, subnormals included, so every rounding path of add and multiply is taken. */
    private static float[] wideFloats(SplittableRandom random, int count) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = Math.scalb(2 * random.nextFloat() - 1, random.nextInt(-140, 41));
        }
        return values;
    }

    private static byte[] bases(SplittableRandom random, int length) {
        byte[] bases = new byte[length];
        for (int i = 0; i < length; i++) {
            bases[i] = (byte) "ACGT".charAt(random.nextInt(4));
        }
        return bases;
    }
}
