package org.vgpu.runtime.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;

/**
 * Each twin on inputs small enough to check by hand, launched through the CPU emulation as a
 * program would launch the kernel (so arguments are also checked against the PTX's parameters).
 * Values are chosen so every float result is exact and can be written down.
 */
class KernelTwinsTest {
    private EmulatedBackend backend;
    private VirtualGpu gpu;
    private ModuleHandle module;

    @BeforeEach
    void open() {
        backend = new EmulatedBackend(1, 64L << 20, TestKernels.twins());
        gpu = backend.open(0, VaWindow.forVgpu(0));
        module = gpu.moduleLoadData(TestKernels.ptx());
    }

    @AfterEach
    void close() {
        gpu.close();
        backend.close();
    }

    @Test
    void emptyKernelRunsAnyGridWithoutTouchingMemory() {
        launch(TestKernels.EMPTY_KERNEL, new Dim3(3, 2, 2), Dim3.of(64), KernelArgs.none());
    }

    @Test
    void vectorAddLeavesThreadsPastNIdle() {
        long a = upload(1, 2, 3, 4);
        long b = upload(10, 20, 30, 40);
        long c = upload(-1, -1, -1, -1);
        launch(
                TestKernels.VECTOR_ADD,
                Dim3.of(1),
                Dim3.of(8),
                KernelArgs.builder().pointer(a).pointer(b).pointer(c).i32(3).build());
        assertArrayEquals(new float[] {11, 22, 33, -1}, readFloats(c, 4));
    }

    @Test
    void vectorAddComputesOnlyTheIndicesTheGridHas() {
        long a = upload(1, 2, 3, 4);
        long b = upload(10, 20, 30, 40);
        long c = upload(-1, -1, -1, -1);
        launch(
                TestKernels.VECTOR_ADD,
                Dim3.of(1),
                Dim3.of(2),
                KernelArgs.builder().pointer(a).pointer(b).pointer(c).i32(4).build());
        assertArrayEquals(new float[] {11, 22, -1, -1}, readFloats(c, 4));
    }

    /** (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 before -1 is added; a fused multiply-add would keep 2^-24. */
    @Test
    void saxpyRoundsTheProductBeforeTheSum() {
        float a = 1 + 0x1p-12f;
        long x = upload(a, 3);
        long y = upload(-1, 0.5f);
        launch(
                TestKernels.SAXPY,
                Dim3.of(1),
                Dim3.of(32),
                KernelArgs.builder().i32(2).f32(a).pointer(x).pointer(y).build());
        float[] result = readFloats(y, 2);
        assertEquals(0x1p-11f, result[0]);
        assertNotEquals(Math.fma(a, a, -1f), result[0]);
        assertEquals(a * 3 + 0.5f, result[1]);
    }

    /** A kernel that uses x only, launched with two rows of blocks: both threads of an index run, one after the other. */
    @Test
    void threadsThatDifferOnlyInUnusedDimensionsRepeatTheWorkInSequence() {
        long x = upload(1);
        long y = upload(1);
        launch(
                TestKernels.SAXPY,
                Dim3.of(1, 2),
                Dim3.of(32),
                KernelArgs.builder().i32(1).f32(1).pointer(x).pointer(y).build());
        assertArrayEquals(new float[] {3}, readFloats(y, 1));
    }

    @Test
    void matMulMultipliesRowByColumn() {
        long a = upload(1, 2, 3, 4);
        long b = upload(5, 6, 7, 8);
        long c = gpu.memAlloc(4 * Float.BYTES);
        launch(
                TestKernels.MAT_MUL,
                Dim3.of(1, 1),
                Dim3.of(4, 4),
                KernelArgs.builder().pointer(a).pointer(b).pointer(c).i32(2).build());
        assertArrayEquals(new float[] {19, 22, 43, 50}, readFloats(c, 4));
    }

    @Test
    void matMulComputesOnlyTheCellsThatHaveAThread() {
        long a = upload(1, 2, 3, 4, 5, 6, 7, 8, 9);
        long identity = upload(1, 0, 0, 0, 1, 0, 0, 0, 1);
        long c = upload(-1, -1, -1, -1, -1, -1, -1, -1, -1);
        launch(
                TestKernels.MAT_MUL,
                Dim3.of(1, 1),
                Dim3.of(2, 2),
                KernelArgs.builder()
                        .pointer(a)
                        .pointer(identity)
                        .pointer(c)
                        .i32(3)
                        .build());
        assertArrayEquals(new float[] {1, 2, -1, 4, 5, -1, -1, -1, -1}, readFloats(c, 9));
    }

    @Test
    void transposeOfANonSquareMatrix() {
        long in = upload(1, 2, 3, 4, 5, 6);
        long out = gpu.memAlloc(6 * Float.BYTES);
        launch(
                TestKernels.TRANSPOSE,
                Dim3.of(1, 1),
                Dim3.of(16, 16),
                KernelArgs.builder().pointer(in).pointer(out).i32(2).i32(3).build());
        assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, readFloats(out, 6));
    }

    /**
     * Two bodies of mass 8 at distance 1 with softening^2 = 3: |d|^2 + 3 = 4, so each pulls the other
     * with 8 / 4^(3/2) = 1. A body's own term is 0 * finite and adds nothing.
     */
    @Test
    void nbodyStepAndIntegrateMoveTwoBodiesTowardsEachOther() {
        long pos = upload(0, 0, 0, 8, 1, 0, 0, 8);
        long vel = upload(0, 0, 0, 0, 0, 0);
        launch(
                TestKernels.NBODY_STEP,
                Dim3.of(1),
                Dim3.of(32),
                KernelArgs.builder()
                        .pointer(pos)
                        .pointer(vel)
                        .i32(2)
                        .f32(0.5f)
                        .f32(3)
                        .build());
        assertArrayEquals(new float[] {0.5f, 0, 0, -0.5f, 0, 0}, readFloats(vel, 6));
        launch(
                TestKernels.NBODY_INTEGRATE,
                Dim3.of(1),
                Dim3.of(32),
                KernelArgs.builder().pointer(pos).pointer(vel).i32(2).f32(0.5f).build());
        assertArrayEquals(new float[] {0.25f, 0, 0, 8, 0.75f, 0, 0, 8}, readFloats(pos, 8));
    }

    /** "ACG" against "CG", match 2, mismatch -1, gap 1: the matrix worked out by hand. */
    @Test
    void smithWatermanFillsTheMatrixOneAntiDiagonalAtATime() {
        long seqA = upload("ACG");
        long seqB = upload("CG");
        long h = gpu.memAlloc(4 * 3 * Integer.BYTES);
        gpu.memsetD32(h, 0, 12);
        for (int diag = 2; diag <= 5; diag++) {
            launch(TestKernels.SW_ANTI_DIAGONAL, Dim3.of(1), Dim3.of(32), smithWaterman(seqA, seqB, h, 3, 2, diag));
        }
        assertArrayEquals(
                new int[] {
                    0, 0, 0,
                    0, 0, 0,
                    0, 2, 1,
                    0, 1, 4
                },
                readInts(h, 12));
    }

    @Test
    void smithWatermanDiagonalsOutsideTheMatrixChangeNothing() {
        long seqA = upload("ACG");
        long seqB = upload("CG");
        long h = gpu.memAlloc(4 * 3 * Integer.BYTES);
        gpu.memsetD32(h, 7, 12);
        for (int diag : new int[] {-1, 0, 1, 6, 100}) {
            launch(TestKernels.SW_ANTI_DIAGONAL, Dim3.of(1), Dim3.of(32), smithWaterman(seqA, seqB, h, 3, 2, diag));
        }
        int[] unchanged = new int[12];
        Arrays.fill(unchanged, 7);
        assertArrayEquals(unchanged, readInts(h, 12));
    }

    /**
     * Box 4, cutoff^2 4, energy shift -0.5. Atoms 0 and 1 are 3 apart in x, so 1 apart through the
     * periodic boundary: r^2 = 1 gives force 24 and pair energy 0 - (-0.5). Atom 2 is exactly at the
     * cutoff from atom 0 (r^2 = 4 is not inside) and farther from atom 1.
     */
    @Test
    void ljForcesUseTheMinimumImageAndTheCutoff() {
        long pos = upload(0.5f, 0.5f, 0.5f, 3.5f, 0.5f, 0.5f, 0.5f, 2.5f, 0.5f);
        long force = gpu.memAlloc(9 * Float.BYTES);
        long potential = gpu.memAlloc(3 * Float.BYTES);
        launch(
                TestKernels.LJ_FORCES,
                Dim3.of(1),
                Dim3.of(32),
                KernelArgs.builder()
                        .pointer(pos)
                        .pointer(force)
                        .pointer(potential)
                        .i32(3)
                        .f32(4)
                        .f32(4)
                        .f32(-0.5f)
                        .build());
        assertArrayEquals(new float[] {24, 0, 0, -24, 0, 0, 0, 0, 0}, readFloats(force, 9));
        assertArrayEquals(new float[] {0.25f, 0.25f, 0}, readFloats(potential, 3));
    }

    /** r^2 = 2: r^-6 = 1/8, force/r = (1/8)(48/8 - 24)/2 = -1.125 (attractive), pair energy 4 (1/64 - 1/8) = -0.4375. */
    @Test
    void ljForcesAttractBeyondTheMinimum() {
        long pos = upload(1, 1, 1, 2, 2, 1);
        long force = gpu.memAlloc(6 * Float.BYTES);
        long potential = gpu.memAlloc(2 * Float.BYTES);
        launch(
                TestKernels.LJ_FORCES,
                Dim3.of(1),
                Dim3.of(32),
                KernelArgs.builder()
                        .pointer(pos)
                        .pointer(force)
                        .pointer(potential)
                        .i32(2)
                        .f32(10)
                        .f32(6.25f)
                        .f32(0)
                        .build());
        assertArrayEquals(new float[] {1.125f, 1.125f, 0, -1.125f, -1.125f, 0}, readFloats(force, 6));
        assertArrayEquals(new float[] {-0.21875f, -0.21875f}, readFloats(potential, 2));
    }

    @Test
    void ljIntegratorsKickDriftAndWrap() {
        long pos = upload(1, 1, 1);
        long vel = upload(1, 1, 1);
        long force = upload(2, -2, 0);
        launch(
                TestKernels.LJ_INITIAL_INTEGRATE,
                Dim3.of(1),
                Dim3.of(32),
                KernelArgs.builder()
                        .pointer(pos)
                        .pointer(vel)
                        .pointer(force)
                        .i32(1)
                        .f32(0.25f)
                        .f32(0.5f)
                        .build());
        assertArrayEquals(new float[] {1.5f, 0.5f, 1}, readFloats(vel, 3));
        assertArrayEquals(new float[] {1.75f, 1.25f, 1.5f}, readFloats(pos, 3));
        launch(
                TestKernels.LJ_FINAL_INTEGRATE,
                Dim3.of(1),
                Dim3.of(32),
                KernelArgs.builder()
                        .pointer(vel)
                        .pointer(force)
                        .i32(1)
                        .f32(0.25f)
                        .build());
        assertArrayEquals(new float[] {2, 0, 1}, readFloats(vel, 3));

        long outside = upload(4.5f, -0.5f, 4, 2, 0, 3.5f);
        launch(
                TestKernels.LJ_APPLY_PERIODIC,
                Dim3.of(1),
                Dim3.of(32),
                KernelArgs.builder().pointer(outside).i32(2).f32(4).build());
        assertArrayEquals(new float[] {0.5f, 3.5f, 0, 2, 0, 3.5f}, readFloats(outside, 6));
    }

    @Test
    void ljKineticEnergyIsHalfTheSquaredSpeed() {
        long vel = upload(1, 2, 2, 0, 0, 3);
        long kinetic = gpu.memAlloc(2 * Float.BYTES);
        launch(
                TestKernels.LJ_KINETIC_ENERGY,
                Dim3.of(1),
                Dim3.of(32),
                KernelArgs.builder().pointer(vel).pointer(kinetic).i32(2).build());
        assertArrayEquals(new float[] {4.5f, 4.5f}, readFloats(kinetic, 2));
    }

    @Test
    void pointerChaseFollowsAddressesStoredInDeviceMemory() {
        long nodes = gpu.memAlloc(3 * 16);
        // node k = {address of node k+1 (mod 3), payload 100 + k}
        gpu.memcpyHtoD(nodes, MemorySegment.ofArray(new long[] {nodes + 16, 100, nodes + 32, 101, nodes, 102}), 48);
        long starts = upload(new long[] {nodes, nodes + 16, nodes + 32});
        long payloads = gpu.memAlloc(3 * Long.BYTES);
        launch(TestKernels.POINTER_CHASE, Dim3.of(1), Dim3.of(32), pointerChase(starts, payloads, 3, 4));
        assertArrayEquals(new long[] {101, 102, 100}, readLongs(payloads, 3));
        launch(TestKernels.POINTER_CHASE, Dim3.of(1), Dim3.of(32), pointerChase(starts, payloads, 3, 0));
        assertArrayEquals(new long[] {100, 101, 102}, readLongs(payloads, 3));
    }

    @Test
    void pointerChaseFaultsOnAPointerOutsideEveryAllocation() {
        long node = upload(new long[] {0xdead_0000L, 1});
        long starts = upload(new long[] {node});
        long payloads = gpu.memAlloc(Long.BYTES);
        VgpuException fault = launchFaulting(TestKernels.POINTER_CHASE, pointerChase(starts, payloads, 1, 2));
        assertTrue(fault.getMessage().contains("0xdead0000"), fault.getMessage());
    }

    @Test
    void pointerChaseFaultsOnAMisalignedPointer() {
        long node = upload(new long[] {0, 1});
        long starts = upload(new long[] {node + 4});
        long payloads = gpu.memAlloc(Long.BYTES);
        VgpuException fault = launchFaulting(TestKernels.POINTER_CHASE, pointerChase(starts, payloads, 1, 0));
        assertTrue(fault.getMessage().contains("misaligned"), fault.getMessage());
    }

    @Test
    void twinsFaultWhenAKernelWouldReadPastItsBuffers() {
        long small = upload(1, 2, 3, 4);
        launchFaulting(
                TestKernels.MAT_MUL,
                KernelArgs.builder()
                        .pointer(small)
                        .pointer(small)
                        .pointer(small)
                        .i32(3)
                        .build());
        long seqA = upload("ACG");
        long seqB = upload("CG");
        long tooSmall = gpu.memAlloc(11 * Integer.BYTES);
        launchFaulting(TestKernels.SW_ANTI_DIAGONAL, smithWaterman(seqA, seqB, tooSmall, 3, 2, 5));
        launchFaulting(
                TestKernels.LJ_FORCES,
                KernelArgs.builder()
                        .pointer(small)
                        .pointer(small)
                        .pointer(small)
                        .i32(2)
                        .f32(10)
                        .f32(6.25f)
                        .f32(0)
                        .build());
    }

    // ---- helpers

    private static KernelArgs smithWaterman(long seqA, long seqB, long h, int lenA, int lenB, int diag) {
        return KernelArgs.builder()
                .pointer(seqA)
                .pointer(seqB)
                .pointer(h)
                .i32(lenA)
                .i32(lenB)
                .i32(diag)
                .i32(2)
                .i32(-1)
                .i32(1)
                .build();
    }

    private static KernelArgs pointerChase(long starts, long payloads, int n, int steps) {
        return KernelArgs.builder()
                .pointer(starts)
                .pointer(payloads)
                .i32(n)
                .i32(steps)
                .build();
    }

    /** Launches and synchronizes, so a fault inside the twin surfaces here. */
    private void launch(String kernel, Dim3 grid, Dim3 block, KernelArgs args) {
        gpu.launchKernel(gpu.moduleGetFunction(module, kernel), grid, block, 0, StreamHandle.DEFAULT, args);
        gpu.ctxSynchronize();
    }

    private VgpuException launchFaulting(String kernel, KernelArgs args) {
        gpu.launchKernel(gpu.moduleGetFunction(module, kernel), Dim3.of(1), Dim3.of(32), 0, StreamHandle.DEFAULT, args);
        VgpuException fault = assertThrows(VgpuException.class, gpu::ctxSynchronize);
        assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, fault.code(), fault.getMessage());
        assertTrue(fault.getMessage().contains(kernel), fault.getMessage());
        return fault;
    }

    private long upload(float... values) {
        return upload(MemorySegment.ofArray(values));
    }

    private long upload(long[] values) {
        return upload(MemorySegment.ofArray(values));
    }

    private long upload(String ascii) {
        return upload(MemorySegment.ofArray(ascii.getBytes(StandardCharsets.US_ASCII)));
    }

    private long upload(MemorySegment host) {
        long address = gpu.memAlloc(host.byteSize());
        gpu.memcpyHtoD(address, host, host.byteSize());
        return address;
    }

    private float[] readFloats(long address, int count) {
        float[] values = new float[count];
        gpu.memcpyDtoH(MemorySegment.ofArray(values), address, count * 4L);
        return values;
    }

    private int[] readInts(long address, int count) {
        int[] values = new int[count];
        gpu.memcpyDtoH(MemorySegment.ofArray(values), address, count * 4L);
        return values;
    }

    private long[] readLongs(long address, int count) {
        long[] values = new long[count];
        gpu.memcpyDtoH(MemorySegment.ofArray(values), address, count * 8L);
        return values;
    }
}
