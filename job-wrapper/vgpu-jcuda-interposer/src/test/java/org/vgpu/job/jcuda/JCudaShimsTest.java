package org.vgpu.job.jcuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.classfile.ClassFile;
import java.lang.classfile.instruction.InvokeDynamicInstruction;
import java.lang.constant.ClassDesc;
import java.lang.constant.ConstantDescs;
import java.lang.constant.DirectMethodHandleDesc;
import java.lang.constant.MethodHandleDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.security.ProtectionDomain;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUDA_MEMCPY2D;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUmemorytype;
import jcuda.driver.CUresult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
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

    /**
     * A free on one thread and an allocation on another that gets the freed address: the session's
     * table keeps the second, so a reset (cuCtxDestroy) frees it too.
     */
    @Test
    void anAllocationThatReusesAnAddressBeingFreedIsFreedByAReset() {
        long bytes = 4096;
        AtomicReference<JCudaSession> session = new AtomicReference<>();
        AtomicLong reused = new AtomicLong();
        VirtualGpu racing = new ForwardingVirtualGpu(gpu) {
            @Override
            public void memFree(long address) {
                super.memFree(address);
                if (reused.get() == 0) {
                    reused.set(CompletableFuture.supplyAsync(() -> session.get().allocate(bytes))
                            .join());
                }
            }
        };
        session.set(new JCudaSession(List.of(racing)));
        long first = session.get().allocate(bytes);
        session.get().free(first);
        assertEquals(first, reused.get(), "first fit gives the freed address out again");
        session.get().reset(0);
        VgpuException gone = assertThrows(VgpuException.class, () -> gpu.memGetAddressRange(first));
        assertEquals(ErrorCode.CUDA_ERROR_NOT_FOUND, gone.code(), "the reset freed the allocation there");
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
    void aProgramsJCudaCallsAreRedirectedAndJCudasAndVgpusOwnClassesAreLeftAlone() throws Exception {
        JCudaCallSites sites = new JCudaCallSites();
        ClassLoader loader = getClass().getClassLoader();

        byte[] rewritten = sites.transform(
                loader,
                "jcudaprograms/JCudaVectorAdd",
                null,
                null,
                RewrittenClassLoader.classBytes("jcudaprograms/JCudaVectorAdd"));
        List<String> staticallyCalled = RewrittenClassLoader.staticCallOwners(rewritten);
        assertTrue(staticallyCalled.contains("org/vgpu/job/jcuda/JCudaDriverShim"), staticallyCalled.toString());
        assertFalse(staticallyCalled.contains("jcuda/driver/JCudaDriver"), staticallyCalled.toString());
        assertTrue(staticallyCalled.contains("jcuda/Pointer"), "Pointer.to stays JCuda's: " + staticallyCalled);

        byte[] unsupported = sites.transform(
                loader,
                "jcudaprograms/JCudaUnsupportedCall",
                null,
                null,
                RewrittenClassLoader.classBytes("jcudaprograms/JCudaUnsupportedCall"));
        assertTrue(new String(unsupported, StandardCharsets.ISO_8859_1).contains("cuMemAllocManaged"));

        for (String leftAlone : List.of("jcuda/driver/JCudaDriver", "org/vgpu/runtime/nativegpu/NativeGpu")) {
            // as the JVM loads them: JCudaDriver from JCuda's jar
            ProtectionDomain domain =
                    Class.forName(leftAlone.replace('/', '.'), false, loader).getProtectionDomain();
            assertEquals(
                    null,
                    sites.transform(loader, leftAlone, null, domain, RewrittenClassLoader.classBytes(leftAlone)),
                    leftAlone);
        }
    }

    /**
     * Method references to JCuda's calls reach the shims: a round trip through them lands in the
     * vGPU's window, the rewritten class holds no handle of JCuda's own calls, and a reference to a
     * call vgpu does not serve throws where it is made, naming the call.
     */
    @Test
    void methodReferencesToJCudaCallsReachTheShimsAndAnUnsupportedOneThrowsWhereItIsMade() throws Exception {
        JCudaSession.install(List.of(gpu));
        String name = "jcudaprograms/JCudaMethodReferences";
        byte[] rewritten = new JCudaCallSites()
                .transform(getClass().getClassLoader(), name, null, null, RewrittenClassLoader.classBytes(name));

        List<String> handleOwners = ClassFile.of().parse(rewritten).methods().stream()
                .flatMap(method -> method.code().stream())
                .flatMap(code -> code.elementStream())
                .filter(element -> element instanceof InvokeDynamicInstruction)
                .flatMap(element -> ((InvokeDynamicInstruction) element).bootstrapArgs().stream())
                .filter(argument -> argument instanceof DirectMethodHandleDesc)
                .map(argument -> ((DirectMethodHandleDesc) argument).owner().descriptorString())
                .distinct()
                .toList();
        assertTrue(handleOwners.contains("Lorg/vgpu/job/jcuda/JCudaDriverShim;"), handleOwners.toString());
        assertFalse(handleOwners.contains("Ljcuda/driver/JCudaDriver;"), handleOwners.toString());

        Class<?> program = new RewrittenClassLoader(getClass().getClassLoader()).define(name, rewritten);
        CUdeviceptr pointer = new CUdeviceptr();
        float[] back =
                (float[]) program.getMethod("roundTrip", CUdeviceptr.class).invoke(null, pointer);
        assertArrayEquals(new float[] {1, 2, 3, 4}, back);
        long address = JCudaObjects.deviceAddress(pointer);
        assertTrue(gpu.window().contains(address, 16), "the allocation is the vGPU's: " + Long.toHexString(address));

        InvocationTargetException managed = assertThrows(
                InvocationTargetException.class,
                () -> program.getMethod("managed").invoke(null));
        assertTrue(
                managed.getCause().getMessage().startsWith("vgpu does not support cuMemAllocManaged"),
                String.valueOf(managed.getCause()));
    }

    /**
     * A JCuda call's method handle loaded as a constant (ldc, which Java source does not write but
     * other JVM languages and bytecode tools do) becomes the shim's; one vgpu does not serve throws.
     */
    @Test
    void aLoadedMethodHandleOfAJCudaCallBecomesTheShimsAndAnUnsupportedOneThrows() throws Throwable {
        ClassDesc driver = ClassDesc.of("jcuda.driver.JCudaDriver");
        byte[] generated = ClassFile.of().build(ClassDesc.of("jcudaprograms.LoadsHandles"), type -> {
            for (String call : List.of("cuCtxSynchronize", "cuProfilerStart")) {
                type.withMethodBody(
                        call,
                        MethodTypeDesc.of(ConstantDescs.CD_MethodHandle),
                        ClassFile.ACC_PUBLIC | ClassFile.ACC_STATIC,
                        code -> code.ldc(MethodHandleDesc.ofMethod(
                                        DirectMethodHandleDesc.Kind.STATIC,
                                        driver,
                                        call,
                                        MethodTypeDesc.of(ConstantDescs.CD_int)))
                                .areturn());
            }
        });
        byte[] rewritten = new JCudaCallSites()
                .transform(getClass().getClassLoader(), "jcudaprograms/LoadsHandles", null, null, generated);
        Class<?> loads =
                new RewrittenClassLoader(getClass().getClassLoader()).define("jcudaprograms/LoadsHandles", rewritten);

        MethodHandle synchronize =
                (MethodHandle) loads.getMethod("cuCtxSynchronize").invoke(null);
        assertEquals(
                JCudaDriverShim.class,
                MethodHandles.lookup().revealDirect(synchronize).getDeclaringClass(),
                synchronize.toString());
        InvocationTargetException unsupported = assertThrows(
                InvocationTargetException.class,
                () -> loads.getMethod("cuProfilerStart").invoke(null));
        assertTrue(
                unsupported.getCause().getMessage().startsWith("vgpu does not support cuProfilerStart"),
                String.valueOf(unsupported.getCause()));
    }

    /** Defines one rewritten class; everything else comes from the parent. */
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
    void aTwoDimensionalCopyTakesRowsOfAPitchedHostBufferToADeviceAndBack() {
        JCudaSession.install(List.of(gpu));
        CUdeviceptr pointer = new CUdeviceptr();
        assertEquals(0, JCudaDriverShim.cuMemAlloc(pointer, 64));
        assertEquals(0, JCudaDriverShim.cuMemsetD8(pointer, (byte) 0, 64));
        byte[] host = new byte[40]; // 4 rows of 10 bytes
        for (int i = 0; i < host.length; i++) {
            host[i] = (byte) i;
        }
        CUDA_MEMCPY2D up = new CUDA_MEMCPY2D();
        up.srcMemoryType = CUmemorytype.CU_MEMORYTYPE_HOST;
        up.srcHost = Pointer.to(host);
        up.srcPitch = 10;
        up.srcXInBytes = 2; // columns 2..5 of rows 1..3
        up.srcY = 1;
        up.dstMemoryType = CUmemorytype.CU_MEMORYTYPE_DEVICE;
        up.dstDevice = pointer;
        up.dstPitch = 16;
        up.WidthInBytes = 4;
        up.Height = 3;
        assertEquals(0, JCudaDriverShim.cuMemcpy2D(up));

        byte[] back = new byte[64];
        assertEquals(0, JCudaDriverShim.cuMemcpyDtoH(Pointer.to(back), pointer, 64));
        byte[] expected = new byte[64];
        for (int row = 0; row < 3; row++) {
            for (int column = 0; column < 4; column++) {
                expected[row * 16 + column] = (byte) ((row + 1) * 10 + 2 + column);
            }
        }
        assertArrayEquals(expected, back);

        up.srcMemoryType = CUmemorytype.CU_MEMORYTYPE_ARRAY;
        CudaException array = assertThrows(CudaException.class, () -> JCudaDriverShim.cuMemcpy2D(up));
        assertTrue(
                array.getMessage().startsWith("vgpu does not support cuMemcpy2D with a CUDA array"),
                array.getMessage());
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
