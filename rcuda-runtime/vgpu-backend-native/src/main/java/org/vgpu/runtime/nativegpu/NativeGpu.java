package org.vgpu.runtime.nativegpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import jcuda.Pointer;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUfunction;
import jcuda.driver.CUjit_option;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;
import jcuda.driver.JITOptions;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.DriverHandles;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelNames;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.PitchedMemory;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.core.AbstractVirtualGpu;
import org.vgpu.runtime.core.ModuleImage;
import org.vgpu.runtime.memory.Allocation;

/**
 * One vGPU on a local GPU. It works in the device's primary context and owns a reservation of its
 * whole window; each allocation is physical memory created with cuMemCreate and mapped at the
 * address the window allocator chose, so the address is the same on any GPU the vGPU moves to.
 * Everything else goes through JCuda. Every operation first makes the context current on the
 * calling thread, so any thread may use the vGPU.
 */
final class NativeGpu extends AbstractVirtualGpu<CUmodule, NativeGpu.Function, CUstream, CUevent>
        implements DriverHandles {

    /** A kernel with its name, for error messages. */
    record Function(CUfunction handle, String name) {}

    /** The null stream handle: CUDA's legacy default stream. */
    private static final CUstream DEFAULT_STREAM = new CUstream();

    private static final int JIT_LOG_BYTES = 16 * 1024;

    private final int ordinal;
    private final DeviceProperties properties;
    private final PrimaryContext context;
    private final WindowReservation reservation;
    /** vgpu's gather and scatter kernels in this context; null where they could not be loaded. */
    private final RegionCopyKernels copyKernels;

    private NativeGpu(
            VaWindow window,
            int ordinal,
            DeviceProperties properties,
            PrimaryContext context,
            WindowReservation reservation,
            RegionCopyKernels copyKernels) {
        super(window);
        this.ordinal = ordinal;
        this.properties = properties;
        this.context = context;
        this.reservation = reservation;
        this.copyKernels = copyKernels;
    }

    /** Retains device {@code ordinal}'s primary context and reserves {@code window} in it. */
    static NativeGpu open(int ordinal, VaWindow window, DeviceProperties properties) {
        PrimaryContext context = PrimaryContext.retain(CudaDriverFfm.deviceGet(ordinal));
        try {
            context.makeCurrent();
            long granularity = CudaDriverFfm.allocationGranularity(ordinal);
            if (granularity <= 0 || VaWindow.GRANULARITY % granularity != 0) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_NOT_SUPPORTED,
                        "GPU " + ordinal + " maps memory in units of " + granularity
                                + " bytes, which do not divide vgpu's window granularity of " + VaWindow.GRANULARITY);
            }
            WindowReservation reservation = WindowReservation.reserve(window);
            // Loaded now, not at the first gather or scatter: a migration's target is opened before the
            // app is stopped, so the module's JIT compilation never adds to the time the app waits.
            return new NativeGpu(
                    window, ordinal, properties, context, reservation, RegionCopyKernels.loadOrNull(ordinal));
        } catch (RuntimeException e) {
            try {
                context.close();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    @Override
    public String backendName() {
        return NativeBackend.NAME;
    }

    // ---- the driver's handles, for a caller in this process that calls the driver itself

    @Override
    public long driverContext() {
        ensureOpen();
        return context.handle();
    }

    @Override
    public long driverFunction(FunctionHandle function) {
        return JCudaInterop.nativeHandle(loadedFunction(function).handle());
    }

    @Override
    public long driverStream(StreamHandle stream) {
        return JCudaInterop.nativeHandle(stream(stream));
    }

    @Override
    public DeviceProperties deviceProperties() {
        return properties;
    }

    @Override
    public MemoryInfo memGetInfo() {
        ensureOpen();
        context.makeCurrent();
        long[] free = new long[1];
        long[] total = new long[1];
        CudaErrors.check(JCudaDriver.cuMemGetInfo(free, total), "cuMemGetInfo");
        return new MemoryInfo(free[0], total[0]);
    }

    @Override
    protected int doDeviceGetAttribute(DeviceAttribute attribute) {
        context.makeCurrent();
        CUdevice device = new CUdevice();
        CudaErrors.check(JCudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
        int[] value = new int[1];
        CudaErrors.check(
                JCudaDriver.cuDeviceGetAttribute(value, attribute.cudaNumber(), device),
                "cuDeviceGetAttribute(" + attribute + ")");
        return value[0];
    }

    /** The primary context's limit, which every vGPU of this process on this GPU shares, as in CUDA. */
    @Override
    protected void doCtxSetLimit(ContextLimit limit, long value) {
        context.makeCurrent();
        CudaErrors.check(JCudaDriver.cuCtxSetLimit(limit.cudaNumber(), value), "cuCtxSetLimit(" + limit + ")");
    }

    @Override
    protected long doCtxGetLimit(ContextLimit limit) {
        context.makeCurrent();
        long[] value = new long[1];
        CudaErrors.check(JCudaDriver.cuCtxGetLimit(value, limit.cudaNumber()), "cuCtxGetLimit(" + limit + ")");
        return value[0];
    }

    // ---- pinned host memory

    /** cuMemAllocHost memory, bounded to its size and freed by cuMemFreeHost when the arena closes. */
    @Override
    @SuppressWarnings("restricted") // sizes the driver's pinned allocation, which is exactly bytes long
    protected MemorySegment doAllocHost(long bytes, Arena arena) {
        context.makeCurrent();
        long address = CudaDriverFfm.memAllocHost(bytes);
        return MemorySegment.ofAddress(address).reinterpret(bytes, arena, unused -> {
            context.makeCurrent();
            CudaDriverFfm.memFreeHost(address);
        });
    }

    // ---- modules and functions

    @Override
    protected CUmodule doModuleLoad(ModuleImage image) {
        context.makeCurrent();
        CUmodule module = new CUmodule();
        byte[] driverImage = image.driverImage();
        // The JIT's error log says what is wrong with a PTX image, which the CUresult alone does not.
        JITOptions options = new JITOptions();
        options.putBytes(CUjit_option.CU_JIT_ERROR_LOG_BUFFER, new byte[JIT_LOG_BYTES]);
        options.putInt(CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, JIT_LOG_BYTES);
        int result = JCudaDriver.cuModuleLoadDataJIT(module, Pointer.to(driverImage), options);
        if (result != CudaErrors.CUDA_SUCCESS) {
            String call = "cuModuleLoadData(" + image.format() + ", " + driverImage.length + " bytes)";
            String log = options.getString(CUjit_option.CU_JIT_ERROR_LOG_BUFFER);
            throw log == null || log.isBlank()
                    ? CudaErrors.failure(result, call)
                    : CudaErrors.failure(result, call, "JIT log: " + log.strip());
        }
        return module;
    }

    @Override
    protected void doModuleUnload(CUmodule module) {
        context.makeCurrent();
        CudaErrors.check(JCudaDriver.cuModuleUnload(module), "cuModuleUnload");
    }

    @Override
    protected DeviceRegion doModuleGetGlobal(CUmodule module, String name) {
        context.makeCurrent();
        CUdeviceptr address = new CUdeviceptr();
        long[] bytes = new long[1];
        int result = JCudaDriver.cuModuleGetGlobal(address, bytes, module, name);
        if (result == CUresult.CUDA_ERROR_NOT_FOUND) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_NOT_FOUND, "module has no variable named '" + name + "'");
        }
        CudaErrors.check(result, "cuModuleGetGlobal(" + name + ")");
        return new DeviceRegion(JCudaInterop.nativeHandle(address), bytes[0]);
    }

    @Override
    protected KernelNames doModuleKernelNames(CUmodule module) {
        context.makeCurrent();
        return new KernelNames(CudaDriverFfm.kernelNames(JCudaInterop.nativeHandle(module)));
    }

    @Override
    protected Function doGetFunction(CUmodule module, String kernelName) {
        context.makeCurrent();
        CUfunction function = new CUfunction();
        int result = JCudaDriver.cuModuleGetFunction(function, module, kernelName);
        if (result == CUresult.CUDA_ERROR_NOT_FOUND) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_NOT_FOUND, "module has no kernel named '" + kernelName + "'");
        }
        CudaErrors.check(result, "cuModuleGetFunction(" + kernelName + ")");
        return new Function(function, kernelName);
    }

    @Override
    protected int doFuncGetAttribute(Function function, FunctionAttribute attribute) {
        context.makeCurrent();
        int[] value = new int[1];
        CudaErrors.check(
                JCudaDriver.cuFuncGetAttribute(value, attribute.cudaNumber(), function.handle()),
                "cuFuncGetAttribute(" + attribute + ", " + function.name() + ")");
        return value[0];
    }

    @Override
    protected void doFuncSetAttribute(Function function, FunctionAttribute attribute, int value) {
        context.makeCurrent();
        CudaErrors.check(
                JCudaDriver.cuFuncSetAttribute(function.handle(), attribute.cudaNumber(), value),
                "cuFuncSetAttribute(" + function.name() + ", " + attribute + ", " + value + ")");
    }

    @Override
    protected KernelSignature doBinarySignature(Function function, String kernelName) {
        context.makeCurrent();
        List<Integer> sizes = CudaDriverFfm.parameterSizes(JCudaInterop.nativeHandle(function.handle()), kernelName);
        return new KernelSignature(kernelName, sizes);
    }

    // ---- device memory in the window

    /**
     * Creates physical memory, maps it at the allocation's address and opens it to the device; a
     * failed step undoes the earlier ones. The creation handle is released at once because the
     * mapping keeps the memory alive: unmapping alone then frees it, and no handle table is needed.
     */
    @Override
    protected void doMap(Allocation allocation) {
        long address = allocation.address();
        long bytes = allocation.mappedBytes();
        long handle = CudaDriverFfm.memCreate(bytes, ordinal);
        try {
            CudaDriverFfm.memMap(address, bytes, handle);
        } catch (RuntimeException e) {
            releaseAfterFailure(handle, e);
            throw e;
        }
        try {
            CudaDriverFfm.memSetAccess(address, bytes, ordinal);
        } catch (RuntimeException e) {
            try {
                CudaDriverFfm.memUnmap(address, bytes);
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            releaseAfterFailure(handle, e);
            throw e;
        }
        CudaDriverFfm.memRelease(handle);
    }

    private static void releaseAfterFailure(long handle, RuntimeException failure) {
        try {
            CudaDriverFfm.memRelease(handle);
        } catch (RuntimeException suppressed) {
            failure.addSuppressed(suppressed);
        }
    }

    /** As cuMemFree, which waits for the device: queued work may still use the range. */
    @Override
    protected void doFreedInChunk() {
        doCtxSynchronize();
    }

    /**
     * Waits for the device before unmapping, as cuMemFree does implicitly: unmapping memory that
     * queued work still uses would fault that work.
     */
    @Override
    protected void doUnmap(Allocation allocation) {
        doCtxSynchronize();
        CudaDriverFfm.memUnmap(allocation.address(), allocation.mappedBytes());
    }

    // ---- copies and memsets

    @Override
    protected void doMemcpyHtoD(long dst, MemorySegment src, long bytes, CUstream stream, boolean async) {
        context.makeCurrent();
        Pointer host = JCudaInterop.hostPointer(src, bytes);
        int result = async
                ? JCudaDriver.cuMemcpyHtoDAsync(JCudaInterop.devicePointer(dst), host, bytes, stream)
                : JCudaDriver.cuMemcpyHtoD(JCudaInterop.devicePointer(dst), host, bytes);
        if (result != CudaErrors.CUDA_SUCCESS) {
            throw CudaErrors.failure(
                    result,
                    String.format("%s(0x%x, %d bytes)", async ? "cuMemcpyHtoDAsync" : "cuMemcpyHtoD", dst, bytes));
        }
    }

    @Override
    protected void doMemcpyDtoH(MemorySegment dst, long src, long bytes, CUstream stream, boolean async) {
        context.makeCurrent();
        Pointer host = JCudaInterop.hostPointer(dst, bytes);
        int result = async
                ? JCudaDriver.cuMemcpyDtoHAsync(host, JCudaInterop.devicePointer(src), bytes, stream)
                : JCudaDriver.cuMemcpyDtoH(host, JCudaInterop.devicePointer(src), bytes);
        if (result != CudaErrors.CUDA_SUCCESS) {
            throw CudaErrors.failure(
                    result,
                    String.format("%s(0x%x, %d bytes)", async ? "cuMemcpyDtoHAsync" : "cuMemcpyDtoH", src, bytes));
        }
    }

    /**
     * Many small regions in a few launches of vgpu's gather kernel, which writes them straight into
     * {@code dst} when it is mapped pinned memory (as {@link #memAllocHost} gives); large regions,
     * and any destination a kernel cannot reach, by one driver copy each.
     */
    @Override
    protected void doMemcpyDtoHGather(MemorySegment dst, List<DeviceRegion> regions, CUstream stream) {
        if (!copyByPlan(dst, regions, stream, true)) {
            super.doMemcpyDtoHGather(dst, regions, stream);
        }
    }

    /** The reverse of {@link #doMemcpyDtoHGather}, with vgpu's scatter kernel. */
    @Override
    protected void doMemcpyHtoDScatter(List<DeviceRegion> regions, MemorySegment src, CUstream stream) {
        if (!copyByPlan(src, regions, stream, false)) {
            super.doMemcpyHtoDScatter(regions, src, stream);
        }
    }

    /**
     * Copies {@code regions} to ({@code toHost}) or from {@code host}, packed, as {@link RegionCopyPlan}
     * splits them between driver copies and the copy kernels; returns false, having done nothing,
     * where the kernels are not worth it (a single region) or cannot reach {@code host}.
     */
    private boolean copyByPlan(MemorySegment host, List<DeviceRegion> regions, CUstream stream, boolean toHost) {
        context.makeCurrent();
        long packed = regions.size() < 2 ? 0 : kernelAddress(host);
        if (packed == 0) {
            return false;
        }
        RegionCopyPlan plan = RegionCopyPlan.of(regions);
        for (RegionCopyPlan.DirectCopy copy : plan.directCopies()) {
            long bytes = copy.region().bytes();
            MemorySegment hostPiece = host.asSlice(copy.packedOffset(), bytes);
            if (toHost) {
                doMemcpyDtoH(hostPiece, copy.region().address(), bytes, stream, true);
            } else {
                doMemcpyHtoD(copy.region().address(), hostPiece, bytes, stream, true);
            }
        }
        for (RegionCopyPlan.KernelBatch batch : plan.kernelBatches()) {
            if (toHost) {
                copyKernels.gather(packed + batch.packedOffset(), batch, stream);
            } else {
                copyKernels.scatter(packed + batch.packedOffset(), batch, stream);
            }
        }
        return true;
    }

    /** Whether gathers and scatters of many small regions into or from {@code host} run on vgpu's copy kernels. */
    boolean copyKernelsReach(MemorySegment host) {
        context.makeCurrent();
        return kernelAddress(host) != 0;
    }

    /**
     * Where this context's copy kernels reach {@code host}, or 0 when they cannot: not loaded, or
     * host memory that is not mapped pinned memory. The context must be current.
     */
    private long kernelAddress(MemorySegment host) {
        return copyKernels == null ? 0 : CudaDriverFfm.mappedDevicePointer(host.address());
    }

    @Override
    protected void doMemcpyDtoD(long dst, long src, long bytes, CUstream stream, boolean async) {
        context.makeCurrent();
        int result = async
                ? JCudaDriver.cuMemcpyDtoDAsync(
                        JCudaInterop.devicePointer(dst), JCudaInterop.devicePointer(src), bytes, stream)
                : JCudaDriver.cuMemcpyDtoD(JCudaInterop.devicePointer(dst), JCudaInterop.devicePointer(src), bytes);
        if (result != CudaErrors.CUDA_SUCCESS) {
            throw CudaErrors.failure(
                    result,
                    String.format(
                            "%s(0x%x <- 0x%x, %d bytes)",
                            async ? "cuMemcpyDtoDAsync" : "cuMemcpyDtoD", dst, src, bytes));
        }
    }

    /** The driver's own 2D copy: one call, which the copy engine does with the pitches. */
    @Override
    protected void doMemcpy2D(PitchedMemory dst, PitchedMemory src, long widthBytes, long height) {
        context.makeCurrent();
        PitchedCopies.copy2D(dst, src, widthBytes, height);
    }

    @Override
    protected void doMemsetD2D32(long dst, long pitch, int value, long width, long height) {
        context.makeCurrent();
        CudaErrors.check(
                JCudaDriver.cuMemsetD2D32(JCudaInterop.devicePointer(dst), pitch, value, width, height),
                "cuMemsetD2D32");
    }

    @Override
    protected void doMemsetD2D32Async(long dst, long pitch, int value, long width, long height, CUstream stream) {
        context.makeCurrent();
        CudaErrors.check(
                JCudaDriver.cuMemsetD2D32Async(JCudaInterop.devicePointer(dst), pitch, value, width, height, stream),
                "cuMemsetD2D32Async");
    }

    @Override
    protected void doMemset(long dst, int value, int elementSize, long count, CUstream stream, boolean async) {
        context.makeCurrent();
        CUdeviceptr target = JCudaInterop.devicePointer(dst);
        int result = switch (elementSize) {
            case 1 ->
                async
                        ? JCudaDriver.cuMemsetD8Async(target, (byte) value, count, stream)
                        : JCudaDriver.cuMemsetD8(target, (byte) value, count);
            case 2 ->
                async
                        ? JCudaDriver.cuMemsetD16Async(target, (short) value, count, stream)
                        : JCudaDriver.cuMemsetD16(target, (short) value, count);
            default ->
                async
                        ? JCudaDriver.cuMemsetD32Async(target, value, count, stream)
                        : JCudaDriver.cuMemsetD32(target, value, count);
        };
        if (result != CudaErrors.CUDA_SUCCESS) {
            throw CudaErrors.failure(
                    result,
                    String.format(
                            "cuMemsetD%d%s(0x%x, 0x%x, %d)", elementSize * 8, async ? "Async" : "", dst, value, count));
        }
    }

    // ---- launch

    @Override
    protected void doLaunch(
            Function function, Dim3 grid, Dim3 block, int sharedMemBytes, CUstream stream, KernelArgs args) {
        context.makeCurrent();
        Pointer kernelParams = args.count() == 0
                ? null
                : KernelParameterBuffer.forCurrentThread().marshal(args);
        int result = JCudaDriver.cuLaunchKernel(
                function.handle(),
                grid.x(),
                grid.y(),
                grid.z(),
                block.x(),
                block.y(),
                block.z(),
                sharedMemBytes,
                stream,
                kernelParams,
                null);
        if (result != CudaErrors.CUDA_SUCCESS) {
            throw CudaErrors.failure(
                    result,
                    "cuLaunchKernel(" + function.name() + ", grid " + grid + ", block " + block + ", " + sharedMemBytes
                            + " bytes shared, args " + args + ")");
        }
    }

    // ---- streams, events, synchronization

    @Override
    protected CUstream defaultStream() {
        return DEFAULT_STREAM;
    }

    @Override
    protected CUstream doStreamCreate() {
        context.makeCurrent();
        CUstream stream = new CUstream();
        CudaErrors.check(JCudaDriver.cuStreamCreate(stream, 0), "cuStreamCreate");
        return stream;
    }

    @Override
    protected void doStreamSynchronize(CUstream stream) {
        context.makeCurrent();
        CudaErrors.check(JCudaDriver.cuStreamSynchronize(stream), "cuStreamSynchronize");
    }

    @Override
    protected boolean doStreamQuery(CUstream stream) {
        context.makeCurrent();
        return done(JCudaDriver.cuStreamQuery(stream), "cuStreamQuery");
    }

    /** A query's answer: CUDA_SUCCESS is done, CUDA_ERROR_NOT_READY not yet; any other result is a failure. */
    private static boolean done(int result, String call) {
        if (result == CUresult.CUDA_ERROR_NOT_READY) {
            return false;
        }
        CudaErrors.check(result, call);
        return true;
    }

    @Override
    protected void doStreamDestroy(CUstream stream) {
        context.makeCurrent();
        CudaErrors.check(JCudaDriver.cuStreamDestroy(stream), "cuStreamDestroy");
    }

    @Override
    protected CUevent doEventCreate() {
        context.makeCurrent();
        CUevent event = new CUevent();
        CudaErrors.check(JCudaDriver.cuEventCreate(event, 0), "cuEventCreate");
        return event;
    }

    @Override
    protected void doEventRecord(CUevent event, CUstream stream) {
        context.makeCurrent();
        CudaErrors.check(JCudaDriver.cuEventRecord(event, stream), "cuEventRecord");
    }

    @Override
    protected void doStreamWaitEvent(CUstream stream, CUevent event) {
        context.makeCurrent();
        CudaErrors.check(JCudaDriver.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
    }

    @Override
    protected boolean doEventQuery(CUevent event) {
        context.makeCurrent();
        return done(JCudaDriver.cuEventQuery(event), "cuEventQuery");
    }

    @Override
    protected void doEventSynchronize(CUevent event) {
        context.makeCurrent();
        CudaErrors.check(JCudaDriver.cuEventSynchronize(event), "cuEventSynchronize");
    }

    @Override
    protected float doEventElapsedTime(CUevent start, CUevent end) {
        context.makeCurrent();
        float[] milliseconds = new float[1];
        CudaErrors.check(JCudaDriver.cuEventElapsedTime(milliseconds, start, end), "cuEventElapsedTime");
        return milliseconds[0];
    }

    @Override
    protected void doEventDestroy(CUevent event) {
        context.makeCurrent();
        CudaErrors.check(JCudaDriver.cuEventDestroy(event), "cuEventDestroy");
    }

    @Override
    protected void doCtxSynchronize() {
        context.makeCurrent();
        CudaErrors.check(JCudaDriver.cuCtxSynchronize(), "cuCtxSynchronize");
    }

    /** Unloads the copy kernels, frees the window, then the context reference (try-with-resources closes in reverse order). */
    @Override
    protected void doClose() {
        try (context;
                reservation) {
            if (copyKernels != null) {
                context.makeCurrent();
                copyKernels.close();
            }
        }
    }
}
