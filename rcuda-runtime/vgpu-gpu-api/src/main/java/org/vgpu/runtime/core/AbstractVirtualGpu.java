package org.vgpu.runtime.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelNames;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.PitchedMemory;
import org.vgpu.runtime.api.PointerAttribute;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.memory.DeviceMemory;

/**
 * The template every backend extends: each {@link VirtualGpu} call is checked, its handles resolved
 * and then handed to the backend's {@code do*} primitive, which receives validated operands and
 * backend objects. What every backend shares sits in collaborators: the device memory and the chunks
 * mapped for it ({@link ChunkBackedGpu}, with the backend's primitives that map them), the handle tables ({@link HandleTable},
 * {@link LoadedModules}, {@link HostAllocations}), module variables' addresses ({@link
 * ModuleGlobals}), the checks that make bad input an error instead of a crash on the device ({@link
 * OperandChecks}, {@link DevicePointers}: foreign, freed or out-of-range pointers; unknown handles;
 * launches whose arguments do not match the kernel) and the default lowering of 2D and many-region
 * calls to per-range primitives ({@link CallLowering}).
 *
 * @param <M> the backend's module object
 * @param <F> the backend's function object
 * @param <S> the backend's stream object
 * @param <E> the backend's event object
 */
public abstract class AbstractVirtualGpu<M, F, S, E> extends ChunkBackedGpu implements VirtualGpu {
    /**
     * The features a vGPU refuses on every backend, whose attributes answer 0 whatever the GPU behind it has: host
     * memory the device reaches (mapped, registered, managed, pageable, host atomics), the program's own virtual memory
     * management and shareable handles, memory pools, IPC and exported memory, multicast, external semaphores, sparse
     * and deferred arrays, and stream memory operations. The launch attributes (cooperative, cluster) keep the GPU's
     * answer: libraries such as cuBLAS choose their kernels by them, and a launch a vGPU refuses is refused naming it.
     */
    static final Set<DeviceAttribute> REFUSED_FEATURES = EnumSet.of(
            DeviceAttribute.CAN_MAP_HOST_MEMORY,
            DeviceAttribute.MANAGED_MEMORY,
            DeviceAttribute.HOST_REGISTER_SUPPORTED,
            DeviceAttribute.READ_ONLY_HOST_REGISTER_SUPPORTED,
            DeviceAttribute.CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
            DeviceAttribute.CONCURRENT_MANAGED_ACCESS,
            DeviceAttribute.PAGEABLE_MEMORY_ACCESS,
            DeviceAttribute.PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
            DeviceAttribute.DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
            DeviceAttribute.HOST_NATIVE_ATOMIC_SUPPORTED,
            DeviceAttribute.ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED,
            DeviceAttribute.VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            DeviceAttribute.GENERIC_COMPRESSION_SUPPORTED,
            DeviceAttribute.GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
            DeviceAttribute.HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
            DeviceAttribute.HANDLE_TYPE_WIN32_HANDLE_SUPPORTED,
            DeviceAttribute.HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED,
            DeviceAttribute.HANDLE_TYPE_FABRIC_SUPPORTED,
            DeviceAttribute.HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            DeviceAttribute.HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            DeviceAttribute.MEMORY_POOLS_SUPPORTED,
            DeviceAttribute.MEMPOOL_SUPPORTED_HANDLE_TYPES,
            DeviceAttribute.HOST_MEMORY_POOLS_SUPPORTED,
            DeviceAttribute.HOST_NUMA_MEMORY_POOLS_SUPPORTED,
            DeviceAttribute.IPC_EVENT_SUPPORTED,
            DeviceAttribute.HOST_NUMA_MULTINODE_IPC_SUPPORTED,
            DeviceAttribute.DMA_BUF_SUPPORTED,
            DeviceAttribute.HOST_ALLOC_DMA_BUF_SUPPORTED,
            DeviceAttribute.GPU_DIRECT_RDMA_SUPPORTED,
            DeviceAttribute.MULTICAST_SUPPORTED,
            DeviceAttribute.TIMELINE_SEMAPHORE_INTEROP_SUPPORTED,
            DeviceAttribute.SPARSE_CUDA_ARRAY_SUPPORTED,
            DeviceAttribute.DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED,
            DeviceAttribute.CAN_USE_STREAM_MEM_OPS_V1,
            DeviceAttribute.CAN_USE_64_BIT_STREAM_MEM_OPS_V1,
            DeviceAttribute.CAN_USE_STREAM_WAIT_VALUE_NOR_V1,
            DeviceAttribute.CAN_USE_64_BIT_STREAM_MEM_OPS,
            DeviceAttribute.CAN_USE_STREAM_WAIT_VALUE_NOR);

    private final DevicePointers pointers;

    private final LoadedModules<M, F> modules;
    private final HandleTable<S> streams = new HandleTable<>("stream");
    private final HandleTable<E> events = new HandleTable<>("event");
    private final HostAllocations hostAllocations = new HostAllocations();

    private volatile boolean closed;

    protected AbstractVirtualGpu(VaWindow window) {
        this(new DeviceMemory(window, ModuleGlobals.areaBytes(window)), new ModuleGlobals(window));
    }

    private AbstractVirtualGpu(DeviceMemory memory, ModuleGlobals globals) {
        super(memory);
        this.pointers = new DevicePointers(memory, globals);
        this.modules = new LoadedModules<>(globals);
    }

    @Override
    public final VaWindow window() {
        return memory().window();
    }

    // ---- backend primitives

    /** The device's figure for a known attribute. */
    protected abstract int doDeviceGetAttribute(DeviceAttribute attribute);

    /** Sets a limit to a value of at least 0. */
    protected abstract void doCtxSetLimit(ContextLimit limit, long value);

    protected abstract long doCtxGetLimit(ContextLimit limit);

    protected abstract M doModuleLoad(ModuleImage image);

    protected abstract void doModuleUnload(M module);

    /**
     * Where the backend keeps module variable {@code name} and its size, as {@code cuModuleGetGlobal}
     * answers; CUDA_ERROR_NOT_FOUND when the module has none of that name.
     */
    protected abstract DeviceRegion doModuleGetGlobal(M module, String name);

    protected abstract F doGetFunction(M module, String kernelName);

    /** The names of the module's kernels, in any order. */
    protected abstract KernelNames doModuleKernelNames(M module);

    protected abstract int doFuncGetAttribute(F function, FunctionAttribute attribute);

    /** Sets a settable attribute to a value within its range. */
    protected abstract void doFuncSetAttribute(F function, FunctionAttribute attribute, int value);

    /** The signature of a function from a non-PTX module; PTX signatures come from the text. */
    protected abstract KernelSignature doBinarySignature(F function, String kernelName);

    /**
     * Page-locked host memory of {@code bytes}, bound to {@code arena}: closing the arena must free
     * it, so that a segment used after {@link #memFreeHost} throws instead of touching freed memory.
     */
    protected abstract MemorySegment doAllocHost(long bytes, Arena arena);

    /**
     * Memory {@link #doAllocHost} gave at {@code address} is freed, by {@link #memFreeHost} or as the vGPU closes: a
     * backend that keeps something for it releases it here, just before its arena closes. Nothing by default.
     */
    protected void doFreeHost(long address) {}

    protected abstract void doMemcpyHtoD(long dst, MemorySegment src, long bytes, S stream, boolean async);

    protected abstract void doMemcpyDtoH(MemorySegment dst, long src, long bytes, S stream, boolean async);

    protected abstract void doMemcpyDtoD(long dst, long src, long bytes, S stream, boolean async);

    /** Validated {@code regions} packed into {@code dst}, asynchronously; lowered by {@link CallLowering#gather}. */
    protected void doMemcpyDtoHGather(MemorySegment dst, List<DeviceRegion> regions, S stream) {
        CallLowering.gather(this, dst, regions, stream);
    }

    /** {@code src}, read back to back, into validated {@code regions}; lowered by {@link CallLowering#scatter}. */
    protected void doMemcpyHtoDScatter(List<DeviceRegion> regions, MemorySegment src, S stream) {
        CallLowering.scatter(this, regions, src, stream);
    }

    /**
     * A validated 2D copy, lowered by {@link CallLowering#memcpy2D}, which the emulation and a remote
     * worker's client use; a local GPU hands the whole copy to its driver.
     */
    protected void doMemcpy2D(PitchedMemory dst, PitchedMemory src, long widthBytes, long height) {
        CallLowering.memcpy2D(this, dst, src, widthBytes, height);
    }

    /** {@code elementSize} is 1, 2 or 4; {@code count} elements. */
    protected abstract void doMemset(long dst, int value, int elementSize, long count, S stream, boolean async);

    /**
     * A validated 2D memset of {@code height} rows of {@code width} 32-bit words, {@code pitch} bytes
     * apart, neither 0, lowered by {@link CallLowering#memsetD2D32}, which the emulation uses; a local
     * GPU hands it to its driver whole, and a remote client sends it as one request.
     */
    protected void doMemsetD2D32(long dst, long pitch, int value, long width, long height) {
        CallLowering.memsetD2D32(this, dst, pitch, value, width, height, defaultStream(), false);
    }

    /** {@link #doMemsetD2D32}, queued on {@code stream}. */
    protected void doMemsetD2D32Async(long dst, long pitch, int value, long width, long height, S stream) {
        CallLowering.memsetD2D32(this, dst, pitch, value, width, height, stream, true);
    }

    protected abstract void doLaunch(F function, Dim3 grid, Dim3 block, int sharedMemBytes, S stream, KernelArgs args);

    /** The backend's object for the default stream. */
    protected abstract S defaultStream();

    protected abstract S doStreamCreate();

    protected abstract void doStreamSynchronize(S stream);

    protected abstract void doStreamDestroy(S stream);

    /** Whether the stream's work is all done; CUDA_ERROR_NOT_READY is {@code false}, not a failure. */
    protected abstract boolean doStreamQuery(S stream);

    protected abstract E doEventCreate();

    protected abstract void doEventRecord(E event, S stream);

    protected abstract void doStreamWaitEvent(S stream, E event);

    protected abstract void doEventSynchronize(E event);

    /** Whether the event's work is done, or the event never recorded; CUDA_ERROR_NOT_READY is {@code false}. */
    protected abstract boolean doEventQuery(E event);

    protected abstract float doEventElapsedTime(E start, E end);

    protected abstract void doEventDestroy(E event);

    protected abstract void doCtxSynchronize();

    /** Releases the window and the device context after everything else, host memory included, is gone. */
    protected abstract void doClose();

    // ---- VirtualGpu

    /**
     * The job's index of this vGPU, the same on every backend: no backend asks its driver, whose
     * ordinal is the physical GPU's (and changes when the vGPU moves).
     */
    @Override
    public final int ctxGetDevice() {
        ensureOpen();
        return vgpuIndex();
    }

    /**
     * The device's figure, except that the features a vGPU refuses ({@link #REFUSED_FEATURES}) are 0 on every
     * backend: a program or library that asks before it uses one (NCCL its virtual memory management, RMM its memory
     * pools) takes its other path instead of a refusal.
     */
    @Override
    public int deviceGetAttribute(DeviceAttribute attribute) {
        ensureOpen();
        DeviceAttribute asked = OperandChecks.given(attribute, "cuDeviceGetAttribute", "attribute");
        return REFUSED_FEATURES.contains(asked) ? 0 : doDeviceGetAttribute(asked);
    }

    @Override
    public void ctxSetLimit(ContextLimit limit, long value) {
        ensureOpen();
        OperandChecks.limit(limit, value);
        doCtxSetLimit(limit, value);
    }

    @Override
    public long ctxGetLimit(ContextLimit limit) {
        ensureOpen();
        return doCtxGetLimit(OperandChecks.given(limit, "cuCtxGetLimit", "limit"));
    }

    @Override
    public ModuleHandle moduleLoadData(byte[] image) {
        ensureOpen();
        ModuleImage parsed = ModuleImage.parse(image);
        M module = doModuleLoad(parsed);
        return modules.add(module, parsed);
    }

    @Override
    public void moduleUnload(ModuleHandle module) {
        ensureOpen();
        doModuleUnload(modules.remove(module).module());
    }

    @Override
    public DeviceRegion moduleGetGlobal(ModuleHandle module, String name) {
        ensureOpen();
        return modules.global(module, name, null, this::doModuleGetGlobal);
    }

    @Override
    public DeviceRegion moduleGetGlobalAt(ModuleHandle module, String name, long address) {
        ensureOpen();
        return modules.global(module, name, address, this::doModuleGetGlobal);
    }

    @Override
    public KernelNames moduleKernelNames(ModuleHandle module) {
        ensureOpen();
        List<String> names =
                doModuleKernelNames(modules.module(module).module()).names();
        return new KernelNames(names.stream().sorted().toList());
    }

    @Override
    public FunctionHandle moduleGetFunction(ModuleHandle module, String kernelName) {
        ensureOpen();
        return modules.addFunction(module, kernelName, this::doGetFunction, this::doBinarySignature);
    }

    @Override
    public int funcGetAttribute(FunctionAttribute attribute, FunctionHandle function) {
        ensureOpen();
        OperandChecks.given(attribute, "cuFuncGetAttribute", "attribute");
        return doFuncGetAttribute(modules.function(function).function(), attribute);
    }

    @Override
    public void funcSetAttribute(FunctionHandle function, FunctionAttribute attribute, int value) {
        ensureOpen();
        F loaded = modules.function(function).function();
        OperandChecks.functionAttribute(
                attribute,
                function.name(),
                value,
                () -> doDeviceGetAttribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
        doFuncSetAttribute(loaded, attribute, value);
    }

    @Override
    public KernelSignature functionSignature(FunctionHandle function) {
        ensureOpen();
        return modules.function(function).signature();
    }

    @Override
    public long memAlloc(long bytes) {
        ensureOpen();
        return chunks().allocate(this, bytes);
    }

    @Override
    public void memAllocAt(long address, long bytes) {
        ensureOpen();
        chunks().allocateAt(this, address, bytes);
    }

    @Override
    public void memAllocAllAt(List<DeviceRegion> allocations) {
        ensureOpen();
        chunks().allocateAllAt(this, OperandChecks.given(allocations, "memAllocAllAt", "allocations"));
    }

    /** Frees the allocation, and its chunk once no allocation is left in it. */
    @Override
    public void memFree(long address) {
        ensureOpen();
        chunks().free(this, address);
    }

    @Override
    public final DeviceRegion memGetAddressRange(long address) {
        ensureOpen();
        return pointers.addressRange(address, vgpuIndex());
    }

    @Override
    public final long pointerGetAttribute(PointerAttribute attribute, long address) {
        ensureOpen();
        return pointers.pointerAttribute(attribute, address, vgpuIndex());
    }

    @Override
    public MemorySegment memAllocHost(long bytes) {
        ensureOpen();
        return hostAllocations.allocate(bytes, this::doAllocHost);
    }

    @Override
    public void memFreeHost(MemorySegment hostMemory) {
        ensureOpen();
        hostAllocations.free(hostMemory, this::doFreeHost);
    }

    @Override
    public void memcpyHtoD(long dstDevice, MemorySegment srcHost, long byteCount) {
        copyHtoD(dstDevice, srcHost, byteCount, null, false);
    }

    @Override
    public void memcpyDtoH(MemorySegment dstHost, long srcDevice, long byteCount) {
        copyDtoH(dstHost, srcDevice, byteCount, null, false);
    }

    @Override
    public void memcpyDtoD(long dstDevice, long srcDevice, long byteCount) {
        ensureOpen();
        copyDtoD(dstDevice, srcDevice, byteCount, defaultStream(), false);
    }

    @Override
    public void memcpyHtoDAsync(long dstDevice, MemorySegment srcHost, long byteCount, StreamHandle stream) {
        copyHtoD(dstDevice, srcHost, byteCount, stream, true);
    }

    @Override
    public void memcpyDtoHAsync(MemorySegment dstHost, long srcDevice, long byteCount, StreamHandle stream) {
        copyDtoH(dstHost, srcDevice, byteCount, stream, true);
    }

    /** A copy to the device, queued on {@code stream} where {@code async}. */
    private void copyHtoD(long dstDevice, MemorySegment srcHost, long bytes, StreamHandle stream, boolean async) {
        ensureOpen();
        long dst = pointers.htoD(dstDevice, srcHost, bytes, async);
        doMemcpyHtoD(dst, srcHost, bytes, async ? stream(stream) : defaultStream(), async);
    }

    /** A copy from the device, queued on {@code stream} where {@code async}. */
    private void copyDtoH(MemorySegment dstHost, long srcDevice, long bytes, StreamHandle stream, boolean async) {
        ensureOpen();
        long src = pointers.dtoH(dstHost, srcDevice, bytes, async);
        doMemcpyDtoH(dstHost, src, bytes, async ? stream(stream) : defaultStream(), async);
    }

    @Override
    public void memcpyDtoDAsync(long dstDevice, long srcDevice, long byteCount, StreamHandle stream) {
        copyDtoD(dstDevice, srcDevice, byteCount, stream(stream), true);
    }

    private void copyDtoD(long dstDevice, long srcDevice, long bytes, S stream, boolean async) {
        OperandChecks.count(bytes);
        long dst = pointers.deviceAddress(dstDevice, bytes, "memcpyDtoD destination");
        long src = pointers.deviceAddress(srcDevice, bytes, "memcpyDtoD source");
        doMemcpyDtoD(dst, src, bytes, stream, async);
    }

    @Override
    public void memcpyDtoHGatherAsync(MemorySegment dstHost, List<DeviceRegion> srcRegions, StreamHandle stream) {
        ensureOpen();
        doMemcpyDtoHGather(dstHost, gatherRegions(dstHost, srcRegions), stream(stream));
    }

    /**
     * The regions of a gather into {@code dstHost}, checked as {@link #memcpyDtoHGatherAsync} checks them: for a
     * backend's own forms of that call.
     */
    protected final List<DeviceRegion> gatherRegions(MemorySegment dstHost, List<DeviceRegion> srcRegions) {
        return pointers.regionCopy("memcpyDtoHGather", srcRegions, dstHost, true);
    }

    @Override
    public void memcpyHtoDScatterAsync(List<DeviceRegion> dstRegions, MemorySegment srcHost, StreamHandle stream) {
        ensureOpen();
        List<DeviceRegion> regions = pointers.regionCopy("memcpyHtoDScatter", dstRegions, srcHost, false);
        doMemcpyHtoDScatter(regions, srcHost, stream(stream));
    }

    @Override
    public void memcpy2D(PitchedMemory dst, PitchedMemory src, long widthBytes, long height) {
        ensureOpen();
        OperandChecks.memcpy2D(dst, src, widthBytes, height);
        PitchedMemory to = pointers.pitchedSide(dst, widthBytes, height, "destination");
        PitchedMemory from = pointers.pitchedSide(src, widthBytes, height, "source");
        if (widthBytes > 0 && height > 0) {
            doMemcpy2D(to, from, widthBytes, height);
        }
    }

    @Override
    public void memsetD8(long dstDevice, byte value, long count) {
        memset(dstDevice, value, 1, count, null, false, "memsetD8");
    }

    @Override
    public void memsetD32(long dstDevice, int value, long count) {
        memset(dstDevice, value, 4, count, null, false, "memsetD32");
    }

    @Override
    public void memsetD16(long dstDevice, short value, long count) {
        memset(dstDevice, Short.toUnsignedInt(value), 2, count, null, false, "memsetD16");
    }

    @Override
    public void memsetD16Async(long dstDevice, short value, long count, StreamHandle stream) {
        memset(dstDevice, Short.toUnsignedInt(value), 2, count, stream, true, "memsetD16Async");
    }

    @Override
    public void memsetD2D32(long dstDevice, long pitch, int value, long width, long height) {
        ensureOpen();
        long dst = pointers.memsetD2D32(dstDevice, pitch, width, height, "memsetD2D32");
        if (width > 0 && height > 0) {
            doMemsetD2D32(dst, CallLowering.rowPitch(pitch, width, height), value, width, height);
        }
    }

    @Override
    public void memsetD2D32Async(long dstDevice, long pitch, int value, long width, long height, StreamHandle stream) {
        ensureOpen();
        long dst = pointers.memsetD2D32(dstDevice, pitch, width, height, "memsetD2D32Async");
        S backendStream = stream(stream);
        if (width > 0 && height > 0) {
            doMemsetD2D32Async(dst, CallLowering.rowPitch(pitch, width, height), value, width, height, backendStream);
        }
    }

    /** A memset of {@code count} elements of {@code size} bytes, queued on {@code stream} where {@code async}. */
    private void memset(
            long dstDevice, int value, int size, long count, StreamHandle stream, boolean async, String call) {
        ensureOpen();
        long dst = pointers.memset(dstDevice, size, count, call);
        doMemset(dst, value, size, count, async ? stream(stream) : defaultStream(), async);
    }

    @Override
    public void memsetD8Async(long dstDevice, byte value, long count, StreamHandle stream) {
        memset(dstDevice, value, 1, count, stream, true, "memsetD8Async");
    }

    @Override
    public void memsetD32Async(long dstDevice, int value, long count, StreamHandle stream) {
        memset(dstDevice, value, 4, count, stream, true, "memsetD32Async");
    }

    @Override
    public void launchKernel(
            FunctionHandle function, Dim3 grid, Dim3 block, int sharedMemBytes, StreamHandle stream, KernelArgs args) {
        ensureOpen();
        LoadedFunction<F> loaded = modules.function(function);
        loaded.signature().check(args);
        OperandChecks.launch(block, sharedMemBytes, () -> deviceProperties().maxThreadsPerBlock());
        doLaunch(loaded.function(), grid, block, sharedMemBytes, stream(stream), args);
    }

    @Override
    public StreamHandle streamCreate() {
        ensureOpen();
        return new StreamHandle(streams.add(doStreamCreate()));
    }

    @Override
    public void streamSynchronize(StreamHandle stream) {
        doStreamSynchronize(stream(stream));
    }

    @Override
    public boolean streamQuery(StreamHandle stream) {
        return doStreamQuery(stream(stream));
    }

    @Override
    public void streamDestroy(StreamHandle stream) {
        ensureOpen();
        if (stream.id() == StreamHandle.DEFAULT.id()) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_HANDLE, "the default stream cannot be destroyed");
        }
        doStreamDestroy(streams.remove(stream.id()));
    }

    @Override
    public EventHandle eventCreate() {
        ensureOpen();
        return new EventHandle(events.add(doEventCreate()));
    }

    @Override
    public void eventRecord(EventHandle event, StreamHandle stream) {
        ensureOpen();
        doEventRecord(events.get(event.id()), stream(stream));
    }

    @Override
    public void streamWaitEvent(StreamHandle stream, EventHandle event) {
        ensureOpen();
        doStreamWaitEvent(stream(stream), events.get(event.id()));
    }

    @Override
    public boolean eventQuery(EventHandle event) {
        ensureOpen();
        return doEventQuery(events.get(event.id()));
    }

    @Override
    public void eventSynchronize(EventHandle event) {
        ensureOpen();
        doEventSynchronize(events.get(event.id()));
    }

    @Override
    public float eventElapsedTime(EventHandle start, EventHandle end) {
        ensureOpen();
        return doEventElapsedTime(events.get(start.id()), events.get(end.id()));
    }

    @Override
    public void eventDestroy(EventHandle event) {
        ensureOpen();
        doEventDestroy(events.remove(event.id()));
    }

    @Override
    public void ctxSynchronize() {
        ensureOpen();
        doCtxSynchronize();
    }

    /**
     * Frees everything in dependency order. Idempotent. The first failure is rethrown after the
     * rest has been released, so one bad resource does not leak the others.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        FailureCollector failures = new FailureCollector();
        for (E event : events.drain()) {
            failures.attempt(() -> doEventDestroy(event));
        }
        for (S stream : streams.drain()) {
            failures.attempt(() -> doStreamDestroy(stream));
        }
        modules.removeAll(failures, this::doModuleUnload);
        chunks().unmapAll(this, failures);
        hostAllocations.freeAll(failures, this::doFreeHost);
        failures.attempt(this::doClose);
        failures.rethrow();
    }

    // ---- checks

    protected final void ensureOpen() {
        if (closed) {
            throw new VgpuException(
                    ErrorCode.VGPU_CLOSED, "vGPU " + vgpuIndex() + " (" + backendName() + ") is closed");
        }
    }

    /** The backend's function for {@code function}. */
    protected final F loadedFunction(FunctionHandle function) {
        ensureOpen();
        return modules.function(function).function();
    }

    /** The backend's stream for {@code stream}, the default one for null or {@link StreamHandle#DEFAULT}. */
    protected final S stream(StreamHandle stream) {
        ensureOpen();
        if (stream == null || stream.id() == StreamHandle.DEFAULT.id()) {
            return defaultStream();
        }
        return streams.get(stream.id());
    }

    @Override
    public final void checkDeviceRegions(List<DeviceRegion> regions, String what) {
        ensureOpen();
        pointers.backendRegions(DevicePointers.regionsGiven(regions, what), what);
    }
}
