package org.vgpu.runtime.emulated;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

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

/** What is particular to the emulation: labels, twins, PTX only, deferred kernel faults, shared device memory. */
class EmulatedBackendTest {
    private static final String PTX_WITHOUT_TWIN = """
            .version 8.0
            .target sm_80
            .address_size 64
            .visible .entry lonelyKernel(
                .param .u32 lonelyKernel_param_0
            )
            {
                ret;
            }
            """;

    private final EmulatedBackend backend = new EmulatedBackend(2, 64L << 20, TestKernels.twins());
    private final VirtualGpu gpu = backend.open(1, VaWindow.forVgpu(3));

    @AfterEach
    void close() {
        gpu.close();
    }

    @Test
    void aTwinReadsItsModulesVariablesByNameAsTheProgramWroteThem() {
        String ptx = """
                .version 8.0
                .target sm_80
                .address_size 64
                .visible .global .align 4 .f32 scale = 0f40000000;
                .visible .entry scaleByGlobal(
                    .param .u64 scaleByGlobal_param_0
                )
                {
                    ret;
                }
                """;
        KernelTwinRegistry twins = new KernelTwinRegistry().register("scaleByGlobal", (grid, block, args, memory) -> {
            MemorySegment data = memory.segment(args.pointer(0), 4);
            float scale = memory.global("scale").get(ValueLayout.JAVA_FLOAT, 0);
            data.set(ValueLayout.JAVA_FLOAT, 0, data.get(ValueLayout.JAVA_FLOAT, 0) * scale);
        });
        try (EmulatedBackend own = new EmulatedBackend(1, 64L << 20, twins);
                VirtualGpu vgpu = own.open(0, VaWindow.forVgpu(0))) {
            ModuleHandle module = vgpu.moduleLoadData(ptx.getBytes(StandardCharsets.US_ASCII));
            FunctionHandle kernel = vgpu.moduleGetFunction(module, "scaleByGlobal");
            long data = vgpu.memAlloc(4);
            vgpu.memcpyHtoD(data, MemorySegment.ofArray(new float[] {3}), 4);
            KernelArgs args = KernelArgs.builder().pointer(data).build();
            vgpu.launchKernel(kernel, Dim3.of(1), Dim3.of(1), 0, StreamHandle.DEFAULT, args);
            vgpu.memcpyHtoD(
                    vgpu.moduleGetGlobal(module, "scale").address(), MemorySegment.ofArray(new float[] {10}), 4);
            vgpu.launchKernel(kernel, Dim3.of(1), Dim3.of(1), 0, StreamHandle.DEFAULT, args);
            float[] back = new float[1];
            vgpu.memcpyDtoH(MemorySegment.ofArray(back), data, 4);
            assertEquals(60f, back[0], "3 x the declared 2, then x the 10 the program wrote");
        }
    }

    @Test
    void everyDeviceSaysItIsEmulation() {
        assertTrue(backend.isEmulation());
        assertEquals(2, backend.deviceCount());
        for (int d = 0; d < backend.deviceCount(); d++) {
            assertTrue(backend.deviceProperties(d).emulated());
            assertTrue(
                    backend.deviceProperties(d).describe().contains("CPU EMULATION"),
                    backend.deviceProperties(d).describe());
            assertTrue(backend.deviceProperties(d).name().contains("emulation"));
        }
    }

    @Test
    void aKernelWithoutTwinIsAClearError() {
        ModuleHandle module = gpu.moduleLoadData(PTX_WITHOUT_TWIN.getBytes(StandardCharsets.US_ASCII));
        FunctionHandle lonely = gpu.moduleGetFunction(module, "lonelyKernel");
        VgpuException e = assertThrows(
                VgpuException.class,
                () -> gpu.launchKernel(
                        lonely,
                        Dim3.of(1),
                        Dim3.of(1),
                        0,
                        StreamHandle.DEFAULT,
                        KernelArgs.builder().i32(1).build()));
        assertEquals(ErrorCode.VGPU_NO_KERNEL_TWIN, e.code());
        assertTrue(e.getMessage().contains("lonelyKernel") && e.getMessage().contains("emulation"), e.getMessage());
    }

    @Test
    void binaryModulesAreNotEmulated() {
        byte[] elf = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
        VgpuException e = assertThrows(VgpuException.class, () -> gpu.moduleLoadData(elf));
        assertEquals(ErrorCode.CUDA_ERROR_NOT_SUPPORTED, e.code());
        assertTrue(e.getMessage().contains("PTX"), e.getMessage());
    }

    @Test
    void aKernelFaultSurfacesAtTheNextSynchronizingCallOnce() {
        long small = gpu.memAlloc(64);
        ModuleHandle module = gpu.moduleLoadData(TestKernels.ptx());
        FunctionHandle add = gpu.moduleGetFunction(module, "vectorAdd");
        // n = 1000 floats, but each buffer holds 16: the twin walks off the allocation.
        gpu.launchKernel(
                add,
                Dim3.of(4),
                Dim3.of(256),
                0,
                StreamHandle.DEFAULT,
                KernelArgs.builder()
                        .pointer(small)
                        .pointer(small)
                        .pointer(small)
                        .i32(1000)
                        .build());
        VgpuException e = assertThrows(VgpuException.class, gpu::ctxSynchronize);
        assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, e.code());
        assertTrue(e.getMessage().contains("vectorAdd"), e.getMessage());
        gpu.ctxSynchronize();
    }

    @Test
    void vgpusOnOneDeviceShareItsMemory() {
        try (VirtualGpu neighbour = backend.open(1, VaWindow.forVgpu(4))) {
            neighbour.memAlloc(40L << 20);
            assertEquals(24L << 20, gpu.memGetInfo().free());
            VgpuException e = assertThrows(VgpuException.class, () -> gpu.memAlloc(30L << 20));
            assertEquals(ErrorCode.CUDA_ERROR_OUT_OF_MEMORY, e.code());
            assertTrue(e.getMessage().contains("emulat"), e.getMessage());
        }
        assertEquals(64L << 20, gpu.memGetInfo().free(), "closing the neighbour returned its memory");
    }

    @Test
    void twinsSeeTheWindowAddresses() {
        long d = gpu.memAlloc(16);
        gpu.memcpyHtoD(d, MemorySegment.ofArray(new long[] {d, 7}), 16);
        EmulatedMemory memory = (EmulatedMemory) gpu;
        assertEquals(d, memory.segment(d, 8).get(java.lang.foreign.ValueLayout.JAVA_LONG, 0));
        VgpuException e = assertThrows(VgpuException.class, () -> memory.segment(d + 8, 16));
        assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, e.code());
    }

    @Test
    void badBackendParametersAreRefused() {
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> new EmulatedBackend(0, 1L << 30, new KernelTwinRegistry()))
                        .code());
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> new EmulatedBackend(1, 1000, new KernelTwinRegistry()))
                        .code());
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_DEVICE,
                assertThrows(VgpuException.class, () -> backend.open(2, VaWindow.forVgpu(0)))
                        .code());
    }
}
