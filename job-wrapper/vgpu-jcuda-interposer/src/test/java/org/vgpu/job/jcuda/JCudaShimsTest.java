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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import jcuda.CudaException;
import jcuda.LogLevel;
import jcuda.Pointer;
import jcuda.driver.CUDA_MEMCPY2D;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUdevprop;
import jcuda.driver.CUlimit;
import jcuda.driver.CUmemorytype;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;
import jcuda.nvrtc.nvrtcProgram;
import jcuda.nvrtc.nvrtcResult;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaDeviceAttr;
import jcuda.runtime.cudaDeviceProp;
import jcuda.runtime.cudaError;
import jcuda.runtime.cudaEvent_t;
import jcuda.runtime.cudaLimit;
import jcuda.runtime.cudaMemcpyKind;
import jcuda.runtime.cudaStream_t;
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
    void deviceQueriesAnswerAsTheDeviceBehindEachVgpu() {
        EmulatedBackend two = Backends.emulated(2);
        try (VirtualGpu second = two.open(1, VaWindow.forVgpu(1))) {
            JCudaSession.install(List.of(gpu, second));
            cudaDeviceProp properties = new cudaDeviceProp();
            assertEquals(0, JCudaRuntimeShim.cudaGetDeviceProperties(properties, 1));
            String name1 = second.deviceProperties().name();
            assertEquals("vgpu CPU emulation #1", name1);
            assertEquals(name1, new String(properties.name, 0, name1.length(), StandardCharsets.US_ASCII));
            assertEquals(0, properties.name[name1.length()], "NUL-terminated");
            assertEquals(second.deviceProperties().totalMemory(), properties.totalGlobalMem);
            assertEquals(8, properties.major);
            assertEquals(0, properties.minor);
            assertEquals(Integer.MAX_VALUE, properties.memPitch);
            assertArrayEquals(new int[] {1024, 1024, 64}, properties.maxThreadsDim);
            assertArrayEquals(new int[] {Integer.MAX_VALUE, 65535, 65535}, properties.maxGridSize);
            assertEquals(48 * 1024, properties.sharedMemPerBlock);
            assertEquals(40 << 20, properties.l2CacheSize);
            assertEquals(0, properties.canMapHostMemory, "a vGPU maps no host memory");
            assertEquals(Runtime.getRuntime().availableProcessors(), properties.multiProcessorCount);

            CUdevice device = new CUdevice();
            assertEquals(0, JCudaDriverShim.cuDeviceGet(device, 0));
            byte[] name = new byte[8];
            assertEquals(0, JCudaDriverShim.cuDeviceGetName(name, name.length, device));
            assertEquals("vgpu CP\0", new String(name, StandardCharsets.US_ASCII), "cut to the length with its NUL");
            int[] pitch = new int[1];
            assertEquals(
                    0,
                    JCudaDriverShim.cuDeviceGetAttribute(
                            pitch, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_PITCH, device));
            assertEquals(Integer.MAX_VALUE, pitch[0]);
            int[] major = new int[1];
            assertEquals(
                    0,
                    JCudaRuntimeShim.cudaDeviceGetAttribute(
                            major, cudaDeviceAttr.cudaDevAttrComputeCapabilityMajor, 1));
            assertEquals(8, major[0]);
            CUdevprop launchLimits = new CUdevprop();
            assertEquals(0, JCudaDriverShim.cuDeviceGetProperties(launchLimits, device));
            assertEquals(32, launchLimits.SIMDWidth);
            assertEquals(Integer.MAX_VALUE, launchLimits.memPitch);
            assertArrayEquals(new int[] {1024, 1024, 64}, launchLimits.maxThreadsDim);

            assertEquals(
                    cudaError.cudaErrorInvalidDevice,
                    JCudaRuntimeShim.cudaGetDeviceProperties(new cudaDeviceProp(), 2));
            JCudaDriverShim.setExceptionsEnabled(true);
            CudaException undefined =
                    assertThrows(CudaException.class, () -> JCudaDriverShim.cuDeviceGetAttribute(pitch, 148, device));
            assertTrue(
                    undefined
                            .getMessage()
                            .startsWith(
                                    "CUDA_ERROR_INVALID_VALUE (vgpu, cuDeviceGetAttribute: "
                                            + "cuDeviceGetAttribute: attribute 148 is not one vgpu answers; CUDA 13.0 defines attributes 1 to 147"),
                    undefined.getMessage());
        } finally {
            two.close();
        }
    }

    @Test
    void pinnedHostMemoryTakesThePortableAndWriteCombinedFlagsAndRefusesMappedByName() {
        JCudaSession.install(List.of(gpu));
        Pointer pinned = new Pointer();
        assertEquals(
                0,
                JCudaRuntimeShim.cudaHostAlloc(
                        pinned, 64, JCuda.cudaHostAllocPortable | JCuda.cudaHostAllocWriteCombined));
        pinned.getByteBuffer().asFloatBuffer().put(new float[] {1, 2, 3, 4});
        CUdeviceptr device = new CUdeviceptr();
        assertEquals(0, JCudaDriverShim.cuMemAlloc(device, 64));
        assertEquals(0, JCudaDriverShim.cuMemcpyHtoD(device, pinned, 16));
        float[] back = new float[4];
        assertEquals(0, JCudaDriverShim.cuMemcpyDtoH(Pointer.to(back), device, 16));
        assertArrayEquals(new float[] {1, 2, 3, 4}, back);
        assertEquals(0, JCudaRuntimeShim.cudaFreeHost(pinned));

        Pointer driverPinned = new Pointer();
        assertEquals(0, JCudaDriverShim.cuMemHostAlloc(driverPinned, 32, JCudaDriver.CU_MEMHOSTALLOC_PORTABLE));
        assertEquals(32, driverPinned.getByteBuffer().capacity());
        assertEquals(0, JCudaDriverShim.cuMemFreeHost(driverPinned));

        CudaException mapped = assertThrows(
                CudaException.class,
                () -> JCudaDriverShim.cuMemHostAlloc(new Pointer(), 32, JCudaDriver.CU_MEMHOSTALLOC_DEVICEMAP));
        assertTrue(
                mapped.getMessage().startsWith("vgpu does not support cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP"),
                mapped.getMessage());
        CudaException runtimeMapped = assertThrows(
                CudaException.class,
                () -> JCudaRuntimeShim.cudaHostAlloc(new Pointer(), 32, JCuda.cudaHostAllocMapped));
        assertTrue(
                runtimeMapped.getMessage().startsWith("vgpu does not support cudaHostAlloc with cudaHostAllocMapped"),
                runtimeMapped.getMessage());
        assertEquals(cudaError.cudaErrorInvalidValue, JCudaRuntimeShim.cudaHostAlloc(new Pointer(), 32, 0x10));
    }

    @Test
    void anArrayOfDevicePointersCopiesTheirAddressesToTheDeviceAndBack() {
        JCudaSession.install(List.of(gpu));
        CUdeviceptr rowA = new CUdeviceptr();
        CUdeviceptr rowB = new CUdeviceptr();
        CUdeviceptr table = new CUdeviceptr();
        assertEquals(0, JCudaDriverShim.cuMemAlloc(rowA, 64));
        assertEquals(0, JCudaDriverShim.cuMemAlloc(rowB, 64));
        assertEquals(0, JCudaDriverShim.cuMemAlloc(table, 3 * Long.BYTES));

        Pointer pointers = Pointer.to(rowA, rowB.withByteOffset(8), null);
        assertEquals(0, JCudaDriverShim.cuMemcpyHtoD(table, pointers, 3 * Long.BYTES));
        long[] addresses = new long[3];
        assertEquals(0, JCudaDriverShim.cuMemcpyDtoH(Pointer.to(addresses), table, 3 * Long.BYTES));
        long a = JCudaObjects.deviceAddress(rowA);
        long b = JCudaObjects.deviceAddress(rowB);
        assertArrayEquals(new long[] {a, b + 8, 0}, addresses);

        CUdeviceptr[] readBack = {new CUdeviceptr(), new CUdeviceptr()};
        Pointer into = Pointer.to(readBack);
        assertEquals(
                0, JCudaRuntimeShim.cudaMemcpy(into, table, 2 * Long.BYTES, cudaMemcpyKind.cudaMemcpyDeviceToHost));
        assertEquals(a, JCudaObjects.deviceAddress(readBack[0]));
        assertEquals(b + 8, JCudaObjects.deviceAddress(readBack[1]));

        // from the second element on, as the pointer's byte offset says
        assertEquals(
                0, JCudaDriverShim.cuMemcpyHtoD(table, Pointer.to(rowA, rowB).withByteOffset(Long.BYTES), Long.BYTES));
        assertEquals(0, JCudaDriverShim.cuMemcpyDtoH(Pointer.to(addresses), table, Long.BYTES));
        assertEquals(b, addresses[0]);

        assertEquals(
                CUresult.CUDA_ERROR_INVALID_VALUE,
                JCudaDriverShim.cuMemcpyHtoD(table, Pointer.to(rowA, Pointer.to(new float[4])), 2 * Long.BYTES),
                "a host buffer's address is nothing a kernel can use");
        assertEquals(
                CUresult.CUDA_ERROR_INVALID_VALUE,
                JCudaDriverShim.cuMemcpyHtoD(table, Pointer.to(rowA, rowB), 3 * Long.BYTES),
                "more than the array holds");
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

    /** Lowered as g++ lowers the same declarations (nm of an object file with these instantiations). */
    @Test
    void theEmulationLowersNameExpressionsAsTheItaniumAbiDoes() {
        String source = """
                template<typename T> __global__ void scaleT(T* data, T factor, int n) {}
                template<typename T, int N> __global__ void blockSum(const T* __restrict__ in, T* out, unsigned int n) {}
                template<typename A, typename B> __global__ void mix(A* a, B* b, A* c, B d) {}
                template<typename T> __global__ void same(T* a, T* b) {}
                __global__ void foo(float* a, float* b, int n) {}
                __global__ void bar(const float* a, float* b, const float* c, long n, size_t m) {}
                extern "C" __global__ void plain(float* a) {}
                """;
        List<String> expressions = List.of(
                "scaleT<float>",
                "&scaleT<double>",
                "blockSum<float, 4>",
                "blockSum<int,-3>",
                "mix<float, double>",
                "same<float>",
                "foo",
                "bar",
                "plain");
        EmulatedNvrtc.Compiled compiled = EmulatedNvrtc.compile(source, expressions);

        assertEquals(
                List.of(
                        "_Z6scaleTIfEvPT_S0_i",
                        "_Z6scaleTIdEvPT_S0_i",
                        "_Z8blockSumIfLi4EEvPKT_PS0_j",
                        "_Z8blockSumIiLin3EEvPKT_PS0_j",
                        "_Z3mixIfdEvPT_PT0_S1_S2_",
                        "_Z4sameIfEvPT_S1_",
                        "_Z3fooPfS_i",
                        "_Z3barPKfPfS0_lm",
                        "plain"),
                expressions.stream().map(compiled.loweredNames()::get).toList());
        String ptx = compiled.ptx();
        assertTrue(
                ptx.contains(".visible .entry _Z6scaleTIdEvPT_S0_i(\n\t.param .b64 _Z6scaleTIdEvPT_S0_i_param_0,\n"
                        + "\t.param .b64 _Z6scaleTIdEvPT_S0_i_param_1,\n\t.param .b32 _Z6scaleTIdEvPT_S0_i_param_2\n)"),
                "the double instantiation's factor has 8 bytes: " + ptx);
        assertFalse(ptx.contains(".entry scaleT("), "a template is declared only as its instantiations: " + ptx);

        VgpuException overloaded = assertThrows(
                VgpuException.class,
                () -> EmulatedNvrtc.compile(
                        "__global__ void f(int a) {}\n__global__ void f(float a) {}", List.of("f")));
        assertTrue(
                overloaded
                        .getMessage()
                        .contains("nvrtcGetLoweredName on the CPU emulation: name expression 'f': f is overloaded"),
                overloaded.getMessage());
        VgpuException classType =
                assertThrows(VgpuException.class, () -> EmulatedNvrtc.compile(source, List.of("scaleT<float2>")));
        assertTrue(classType.getMessage().contains("type 'float2' is not one vgpu lowers"), classType.getMessage());
    }

    @Test
    void nvrtcNameExpressionsAreAddedBeforeTheCompileAndLoweredAfterIt() {
        JCudaSession.install(List.of(gpu));
        nvrtcProgram program = new nvrtcProgram();
        assertEquals(
                0,
                JNvrtcShim.nvrtcCreateProgram(
                        program,
                        "template<typename T> __global__ void twice(T* data, int n) {}",
                        "twice.cu",
                        0,
                        null,
                        null));
        assertEquals(0, JNvrtcShim.nvrtcAddNameExpression(program, "twice<int>"));
        String[] lowered = new String[1];
        assertEquals(
                nvrtcResult.NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION,
                JNvrtcShim.nvrtcGetLoweredName(program, "twice<int>", lowered));
        assertEquals(0, JNvrtcShim.nvrtcCompileProgram(program, 0, null));
        assertEquals(
                nvrtcResult.NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION,
                JNvrtcShim.nvrtcAddNameExpression(program, "twice<float>"));
        assertEquals(
                nvrtcResult.NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID,
                JNvrtcShim.nvrtcGetLoweredName(program, "twice<float>", lowered));
        assertEquals(0, JNvrtcShim.nvrtcGetLoweredName(program, "twice<int>", lowered));
        assertEquals("_Z5twiceIiEvPT_i", lowered[0]);
        String[] ptx = new String[1];
        assertEquals(0, JNvrtcShim.nvrtcGetPTX(program, ptx));
        assertTrue(ptx[0].contains(".entry _Z5twiceIiEvPT_i("), ptx[0]);
        assertEquals(0, JNvrtcShim.nvrtcDestroyProgram(program));
    }

    /**
     * A host function runs after the work queued on its stream before it, and the work queued after it (here a copy
     * into the memory the function read) waits until it has returned; a synchronize waits for it, and a query says
     * the stream is busy while it has not run.
     */
    @Test
    void aStreamCallbackRunsAfterTheWorkBeforeItAndTheWorkAfterItWaitsForIt() throws Exception {
        JCudaSession.install(List.of(gpu));
        CUstream stream = new CUstream();
        assertEquals(0, JCudaDriverShim.cuStreamCreate(stream, 0));
        CUdeviceptr device = new CUdeviceptr();
        assertEquals(0, JCudaDriverShim.cuMemAlloc(device, 16));
        Pointer pinned = new Pointer();
        assertEquals(0, JCudaDriverShim.cuMemAllocHost(pinned, 16));
        assertEquals(0, JCudaDriverShim.cuMemsetD32Async(device, 7, 4, stream));
        assertEquals(0, JCudaDriverShim.cuMemcpyDtoHAsync(pinned, device, 16, stream));

        CountDownLatch release = new CountDownLatch(1);
        List<String> seen = new CopyOnWriteArrayList<>();
        assertEquals(
                0,
                JCudaDriverShim.cuStreamAddCallback(
                        stream,
                        (calledOn, status, userData) -> {
                            seen.add(userData + " status " + status + ", saw "
                                    + pinned.getByteBuffer().getInt(0)
                                    + " on " + Thread.currentThread().getName()
                                    + (stream.equals(calledOn) ? ", its stream" : ""));
                            awaitQuietly(release);
                        },
                        "first",
                        0));
        assertEquals(CUresult.CUDA_ERROR_NOT_READY, JCudaDriverShim.cuStreamQuery(stream));
        CompletableFuture<Integer> after = CompletableFuture.supplyAsync(() -> {
            int result = JCudaDriverShim.cuMemsetD32Async(device, 9, 4, stream);
            seen.add("the memset after it was queued");
            return result;
        });
        Thread.sleep(200);
        assertEquals(List.of("first status 0, saw 7 on vgpu host functions, its stream"), seen);
        release.countDown();
        assertEquals(0, after.get(10, TimeUnit.SECONDS));
        assertEquals(
                0,
                JCudaDriverShim.cuLaunchHostFunc(
                        stream,
                        userData -> seen.add("host function " + userData + ", its own memset: "
                                + JCudaDriverShim.cuMemsetD32Async(device, 1, 4, stream)),
                        "second"));
        assertEquals(0, JCudaDriverShim.cuStreamSynchronize(stream));
        assertEquals(
                List.of(
                        "first status 0, saw 7 on vgpu host functions, its stream",
                        "the memset after it was queued",
                        "host function second, its own memset: " + CUresult.CUDA_ERROR_NOT_PERMITTED),
                seen);
        assertEquals(0, JCudaDriverShim.cuStreamQuery(stream));

        AtomicReference<cudaStream_t> runtimeStream = new AtomicReference<>();
        assertEquals(
                0,
                JCudaRuntimeShim.cudaStreamAddCallback(
                        null, (calledOn, status, userData) -> runtimeStream.set(calledOn), null, 0));
        assertEquals(0, JCudaRuntimeShim.cudaDeviceSynchronize());
        assertEquals(null, runtimeStream.get(), "the default stream's callback gets the stream it was given");
        assertEquals(
                CUresult.CUDA_ERROR_INVALID_VALUE,
                JCudaDriverShim.cuStreamAddCallback(stream, (s, status, data) -> {}, null, 1),
                "flags must be 0");
    }

    /**
     * The runtime's queries answer as the driver's: cudaErrorNotReady while a host function queued on the stream has
     * not run, success once it has; an event recorded after it is not ready until then either.
     */
    @Test
    void theRuntimesStreamAndEventQueriesAnswerNotReadyUntilTheWorkBeforeThemIsDone() throws Exception {
        JCudaSession.install(List.of(gpu));
        cudaStream_t stream = new cudaStream_t();
        assertEquals(0, JCudaRuntimeShim.cudaStreamCreate(stream));
        cudaEvent_t event = new cudaEvent_t();
        assertEquals(0, JCudaRuntimeShim.cudaEventCreate(event));
        CountDownLatch release = new CountDownLatch(1);
        assertEquals(0, JCudaRuntimeShim.cudaLaunchHostFunc(stream, userData -> awaitQuietly(release), null));
        CompletableFuture<Integer> record =
                CompletableFuture.supplyAsync(() -> JCudaRuntimeShim.cudaEventRecord(event, stream));

        assertEquals(cudaError.cudaErrorNotReady, JCudaRuntimeShim.cudaStreamQuery(stream));
        release.countDown();
        assertEquals(0, record.get(10, TimeUnit.SECONDS));
        assertEquals(0, JCudaRuntimeShim.cudaEventSynchronize(event));
        assertEquals(cudaError.cudaSuccess, JCudaRuntimeShim.cudaEventQuery(event));
        assertEquals(0, JCudaRuntimeShim.cudaStreamSynchronize(stream));
        assertEquals(cudaError.cudaSuccess, JCudaRuntimeShim.cudaStreamQuery(stream));
        assertEquals(cudaError.cudaErrorInvalidResourceHandle, JCudaRuntimeShim.cudaEventQuery(new cudaEvent_t()));
    }

    /** JCuda's pure helpers answer as JCuda's: the log level has nothing to set, align rounds up. */
    @Test
    void jcudasLogLevelAndAlignHelpersAreServed() {
        JCudaDriverShim.setLogLevel(LogLevel.LOG_DEBUG);
        JCudaRuntimeShim.setLogLevel(LogLevel.LOG_DEBUG);
        JNvrtcShim.setLogLevel(LogLevel.LOG_DEBUG);
        assertEquals(16, JCudaDriverShim.align(13, 8));
        assertEquals(16, JCudaDriverShim.align(16, 8));
        assertEquals(24, JCudaDriverShim.align(21, 4));
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void deviceHeapLimitsAreSetAndReadAndHostFlagsAnsweredWhileMappedPointersAreRefused() {
        JCudaSession.install(List.of(gpu));
        long[] value = new long[1];
        assertEquals(0, JCudaDriverShim.cuCtxGetLimit(value, CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE));
        assertEquals(8 << 20, value[0], "CUDA's default until set");
        assertEquals(0, JCudaDriverShim.cuCtxSetLimit(CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE, 64L << 20));
        assertEquals(0, JCudaRuntimeShim.cudaDeviceGetLimit(value, cudaLimit.cudaLimitMallocHeapSize));
        assertEquals(64L << 20, value[0]);
        assertEquals(0, JCudaRuntimeShim.cudaDeviceSetLimit(cudaLimit.cudaLimitPrintfFifoSize, 4L << 20));
        assertEquals(0, JCudaDriverShim.cuCtxGetLimit(value, CUlimit.CU_LIMIT_PRINTF_FIFO_SIZE));
        assertEquals(4L << 20, value[0]);
        assertEquals(
                cudaError.cudaErrorInvalidValue,
                JCudaRuntimeShim.cudaDeviceSetLimit(cudaLimit.cudaLimitPersistingL2CacheSize, 1));

        Pointer pinned = new Pointer();
        assertEquals(
                0,
                JCudaDriverShim.cuMemHostAlloc(
                        pinned, 64, JCudaDriver.CU_MEMHOSTALLOC_PORTABLE | JCudaDriver.CU_MEMHOSTALLOC_WRITECOMBINED));
        int[] flags = new int[1];
        assertEquals(0, JCudaDriverShim.cuMemHostGetFlags(flags, pinned));
        assertEquals(JCudaDriver.CU_MEMHOSTALLOC_PORTABLE | JCudaDriver.CU_MEMHOSTALLOC_WRITECOMBINED, flags[0]);
        assertEquals(CUresult.CUDA_ERROR_INVALID_VALUE, JCudaDriverShim.cuMemHostGetFlags(flags, Pointer.to(flags)));
        CudaException driver = assertThrows(
                CudaException.class, () -> JCudaDriverShim.cuMemHostGetDevicePointer(new CUdeviceptr(), pinned, 0));
        assertTrue(
                driver.getMessage().startsWith("vgpu does not support cuMemHostGetDevicePointer (mapped host memory"),
                driver.getMessage());
        CudaException runtime = assertThrows(
                CudaException.class, () -> JCudaRuntimeShim.cudaHostGetDevicePointer(new Pointer(), pinned, 0));
        assertTrue(
                runtime.getMessage().startsWith("vgpu does not support cudaHostGetDevicePointer (mapped host memory"),
                runtime.getMessage());
        assertEquals(0, JCudaDriverShim.cuMemFreeHost(pinned));
    }
}
