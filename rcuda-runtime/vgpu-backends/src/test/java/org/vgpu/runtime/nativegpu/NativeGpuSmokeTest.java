package org.vgpu.runtime.nativegpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUjitInputType;
import jcuda.driver.CUlinkState;
import jcuda.driver.JCudaDriver;
import jcuda.driver.JITOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * What is particular to the native backend, beyond the shared contract: the window is reserved at
 * exactly its address, cubin signatures come from the driver, the JIT log reaches the error, and
 * the context follows the calling thread.
 */
@Tag("gpu")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NativeGpuSmokeTest {
    private NativeBackend backend;

    @BeforeAll
    void load() {
        backend = NativeBackend.load();
    }

    @AfterAll
    void unload() {
        backend.close();
    }

    /**
     * Mem-sync's many small regions take the copy kernels' path only if the kernels load and
     * memAllocHost's pinned memory is mapped for them; otherwise the copies are merely slow, so
     * the conformance suite alone would not notice.
     */
    @Test
    void theCopyKernelsLoadAndReachPinnedMemoryButNotPageableMemory() {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(4));
                Arena arena = Arena.ofConfined()) {
            MemorySegment pinned = gpu.memAllocHost(1 << 20);
            NativeGpu nativeGpu = (NativeGpu) gpu;
            assertTrue(nativeGpu.copyKernelsReach(pinned), "pinned memory from memAllocHost");
            assertTrue(nativeGpu.copyKernelsReach(pinned.asSlice(12345)), "the inside of pinned memory");
            assertEquals(
                    pinned.address() + 12345,
                    CudaDriverFfm.mappedDevicePointer(pinned.address() + 12345),
                    "unified addressing: kernels see pinned memory at its host address");
            assertFalse(nativeGpu.copyKernelsReach(arena.allocate(1 << 20)), "pageable memory");
            gpu.memFreeHost(pinned);
        }
    }

    /** Reserve window, allocate, copy round trip, launch, follow a pointer stored in device memory, free, close. */
    @Test
    void endToEnd() {
        VaWindow window = VaWindow.forVgpu(3);
        long node;
        try (VirtualGpu gpu = backend.open(0, window)) {
            node = gpu.memAlloc(16);
            assertEquals(window.base(), node, "the first allocation sits at the window's base");
            long starts = gpu.memAlloc(8);
            long payloads = gpu.memAlloc(8);
            // One node that points to itself, with payload 4242.
            gpu.memcpyHtoD(node, MemorySegment.ofArray(new long[] {node, 4242}), 16);
            gpu.memcpyHtoD(starts, MemorySegment.ofArray(new long[] {node}), 8);
            ModuleHandle module = gpu.moduleLoadData(TestKernels.ptx());
            FunctionHandle chase = gpu.moduleGetFunction(module, TestKernels.POINTER_CHASE);
            gpu.launchKernel(
                    chase,
                    Dim3.of(1),
                    Dim3.of(32),
                    0,
                    StreamHandle.DEFAULT,
                    KernelArgs.builder()
                            .pointer(starts)
                            .pointer(payloads)
                            .i32(1)
                            .i32(5)
                            .build());
            long[] result = new long[1];
            gpu.memcpyDtoH(MemorySegment.ofArray(result), payloads, 8);
            assertEquals(4242, result[0]);
            gpu.memFree(payloads);
            gpu.memFree(starts);
        }
        try (VirtualGpu again = backend.open(0, window)) {
            assertEquals(node, again.memAlloc(1), "closing released the window and its memory");
        }
    }

    @Test
    void aWindowTakenInThisProcessIsUnavailable() {
        VaWindow window = VaWindow.forVgpu(4);
        try (VirtualGpu first = backend.open(0, window)) {
            VgpuException e = assertThrows(VgpuException.class, () -> backend.open(0, window));
            assertEquals(ErrorCode.VGPU_WINDOW_UNAVAILABLE, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains(Long.toHexString(window.base())), e.getMessage());
            long p = first.memAlloc(64);
            first.memsetD8(p, (byte) 1, 64);
            first.ctxSynchronize();
        }
    }

    @Test
    void hostSlicesAndNativeSegmentsCopyFromTheirOwnOffset() {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(5));
                Arena arena = Arena.ofConfined()) {
            long d = gpu.memAlloc(64);
            int[] source = new int[16];
            Arrays.setAll(source, i -> 100 + i);
            gpu.memcpyHtoD(d, MemorySegment.ofArray(source).asSlice(8 * 4), 8 * 4);
            MemorySegment back = arena.allocate(64);
            gpu.memcpyDtoH(back.asSlice(4), d, 8 * 4);
            int[] readBack = new int[9];
            MemorySegment.copy(back, JAVA_INT, 0, readBack, 0, 9);
            assertArrayEquals(new int[] {0, 108, 109, 110, 111, 112, 113, 114, 115}, readBack);
            byte[] readOnly = {9, 8, 7, 6};
            gpu.memcpyHtoD(d, MemorySegment.ofArray(readOnly).asReadOnly(), 4);
            byte[] four = new byte[4];
            gpu.memcpyDtoH(MemorySegment.ofArray(four), d, 4);
            assertArrayEquals(readOnly, four);
        }
    }

    @Test
    void pinnedMemoryIsUnusableAfterItIsFreed() {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(6))) {
            MemorySegment host = gpu.memAllocHost(1 << 20);
            host.set(JAVA_LONG, 0, 77);
            gpu.memFreeHost(host);
            assertThrows(IllegalStateException.class, () -> host.get(JAVA_BYTE, 0));
            assertThrows(VgpuException.class, () -> gpu.memFreeHost(host));
        }
    }

    @Test
    void cubinSignaturesComeFromTheDriverAndMatchThePtx() {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(7))) {
            ModuleHandle ptx = gpu.moduleLoadData(TestKernels.ptx());
            ModuleHandle cubin = gpu.moduleLoadData(linkToCubin(TestKernels.ptx()));
            for (String kernel : TestKernels.kernelNames()) {
                assertEquals(
                        gpu.functionSignature(gpu.moduleGetFunction(ptx, kernel))
                                .parameterSizes(),
                        gpu.functionSignature(gpu.moduleGetFunction(cubin, kernel))
                                .parameterSizes(),
                        kernel);
            }
            int n = 1000;
            float[] a = new float[n];
            for (int i = 0; i < n; i++) {
                a[i] = i;
            }
            long da = gpu.memAlloc(n * 4L);
            long dc = gpu.memAlloc(n * 4L);
            gpu.memcpyHtoD(da, MemorySegment.ofArray(a), n * 4L);
            gpu.launchKernel(
                    gpu.moduleGetFunction(cubin, TestKernels.VECTOR_ADD),
                    Dim3.of(4),
                    Dim3.of(256),
                    0,
                    StreamHandle.DEFAULT,
                    KernelArgs.builder()
                            .pointer(da)
                            .pointer(da)
                            .pointer(dc)
                            .i32(n)
                            .build());
            float[] c = new float[n];
            gpu.memcpyDtoH(MemorySegment.ofArray(c), dc, n * 4L);
            assertEquals(2f * 999, c[999]);
        }
    }

    @Test
    void theJitLogExplainsBadPtx() {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(8))) {
            byte[] broken = """
                    .version 8.0
                    .target sm_80
                    .address_size 64
                    .visible .entry broken()
                    {
                        no.such.instruction;
                    }
                    """.getBytes(StandardCharsets.US_ASCII);
            VgpuException e = assertThrows(VgpuException.class, () -> gpu.moduleLoadData(broken));
            assertEquals(ErrorCode.CUDA_ERROR_INVALID_PTX, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("JIT log: "), e.getMessage());
        }
    }

    @Test
    void theContextFollowsTheCallingThreadWhateverElseChangedIt() throws Exception {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(9))) {
            long d = gpu.memAlloc(4);
            CudaErrors.check(JCudaDriver.cuCtxSetCurrent(new CUcontext()), "cuCtxSetCurrent(NULL)");
            gpu.memsetD32(d, 0x01020304, 1);
            Thread other = new Thread(() -> gpu.memsetD8(d, (byte) 9, 1));
            other.start();
            other.join();
            byte[] back = new byte[4];
            gpu.memcpyDtoH(MemorySegment.ofArray(back), d, 4);
            assertArrayEquals(new byte[] {9, 3, 2, 1}, back);
        }
    }

    /** Has the driver's JIT linker turn PTX into a cubin for this GPU (no nvcc needed on the test machine). */
    @SuppressWarnings("restricted")
    private static byte[] linkToCubin(byte[] ptx) {
        byte[] terminated = Arrays.copyOf(ptx, ptx.length + 1);
        CUlinkState link = new CUlinkState();
        CudaErrors.check(JCudaDriver.cuLinkCreate(new JITOptions(), link), "cuLinkCreate");
        try {
            CudaErrors.check(
                    JCudaDriver.cuLinkAddData(
                            link,
                            CUjitInputType.CU_JIT_INPUT_PTX,
                            Pointer.to(terminated),
                            terminated.length,
                            "test_kernels.ptx",
                            new JITOptions()),
                    "cuLinkAddData");
            Pointer image = new Pointer();
            long[] size = new long[1];
            CudaErrors.check(JCudaDriver.cuLinkComplete(link, image, size), "cuLinkComplete");
            // The image belongs to the link state, so it is copied out before cuLinkDestroy.
            return MemorySegment.ofAddress(JCudaInterop.nativeHandle(image))
                    .reinterpret(size[0])
                    .toArray(JAVA_BYTE);
        } finally {
            CudaErrors.check(JCudaDriver.cuLinkDestroy(link), "cuLinkDestroy");
        }
    }
}
