package org.vgpu.job.jcuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.List;

import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;

/** The shims against JCuda's own classes, and their error behaviour, called directly on one emulated vGPU. */
class JCudaShimsTest {
    private final EmulatedBackend backend = Backends.emulated(1);
    private final VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0));

    @AfterEach
    void close() {
        JCudaApi.DRIVER.setExceptionsEnabled(false);
        gpu.close();
    }

    @Test
    void everyShimMethodIsAJCudaMethodOfTheSameDescriptor() throws Exception {
        for (var shim : JCudaCallSites.SHIMS.entrySet()) {
            Class<?> jcuda = Class.forName(
                    shim.getKey().replace('/', '.'), false, getClass().getClassLoader());
            for (Method method : shim.getValue().getDeclaredMethods()) {
                if (Modifier.isPublic(method.getModifiers()) && Modifier.isStatic(method.getModifiers())) {
                    Method original = jcuda.getMethod(method.getName(), method.getParameterTypes());
                    assertEquals(original.getReturnType(), method.getReturnType(), method.toString());
                    assertTrue(Modifier.isStatic(original.getModifiers()), method.toString());
                }
            }
        }
    }

    @Test
    void errorsAreCodesUntilExceptionsAreEnabledThenJCudasExceptionNamingTheCode() {
        JCudaSession.install(List.of(gpu));
        CUdeviceptr never = new CUdeviceptr();

        assertEquals(CUresult.CUDA_ERROR_INVALID_VALUE, JCudaDriverShim.cuMemFree(never));

        JCudaDriverShim.setExceptionsEnabled(true);
        CudaException thrown = assertThrows(CudaException.class, () -> JCudaDriverShim.cuMemFree(never));
        assertTrue(thrown.getMessage().startsWith("CUDA_ERROR_INVALID_VALUE (vgpu, cuMemFree: "), thrown.getMessage());
    }

    @Test
    void aDevicePointerIsAWindowAddressAndCopiesGoThroughJCudasHostPointers() {
        JCudaSession.install(List.of(gpu));
        CUdeviceptr pointer = new CUdeviceptr();

        assertEquals(0, JCudaDriverShim.cuMemAlloc(pointer, 64));
        long address = JCudaObjects.deviceAddress(pointer);
        assertTrue(gpu.window().contains(address, 64), Long.toHexString(address));
        float[] data = {1, 2, 3, 4, 5, 6, 7, 8};
        assertEquals(0, JCudaDriverShim.cuMemcpyHtoD(pointer, Pointer.to(data), 32));
        float[] back = new float[4];
        assertEquals(0, JCudaDriverShim.cuMemcpyDtoH(Pointer.to(back), pointer.withByteOffset(16), 16));
        assertArrayEquals(new float[] {5, 6, 7, 8}, back);
        // more than the host array holds is refused, not read past it
        assertEquals(CUresult.CUDA_ERROR_INVALID_VALUE, JCudaDriverShim.cuMemcpyHtoD(pointer, Pointer.to(back), 32));
        assertEquals(0, JCudaDriverShim.cuMemFree(pointer));
    }

    @Test
    void theEmulationsNvrtcDeclaresTheKernelsAndVariablesOfASource() {
        String ptx = EmulatedNvrtc.declarations("""
                __constant__ float table[8];
                // __global__ void commentedOut(int x)
                extern "C" __global__ void kernel(const float * __restrict__ in, double scale, int n, char c) {}
                """);

        assertTrue(ptx.contains(".const .align 4 .b32 table[8];"), ptx);
        assertTrue(
                ptx.contains(".visible .entry kernel(\n\t.param .b64 kernel_param_0,\n\t.param .b64 kernel_param_1,"
                        + "\n\t.param .b32 kernel_param_2,\n\t.param .b8 kernel_param_3\n)"),
                ptx);
        assertTrue(!ptx.contains("commentedOut"), ptx);
    }
}
