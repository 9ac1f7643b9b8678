package org.vgpu.runtime.core;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.PitchedMemory;
import org.vgpu.runtime.api.PointerAttribute;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.memory.Allocation;
import org.vgpu.runtime.memory.DeviceMemory;
import org.vgpu.runtime.memory.WindowAllocator;

/**
 * What every backend shares: the device memory (chunks of the window and the allocations in them,
 * small ones sharing chunks: {@link DeviceMemory}), the handle tables,
 * and the checks that make bad input an error instead of a crash on the device (foreign, freed or
 * out-of-range pointers; unknown handles; launches whose arguments do not match the kernel).
 * A backend implements only the {@code do*} primitives, which receive validated operands and
 * resolved backend objects.
 *
 * @param <M> the backend's module object
 * @param <F> the backend's function object
 * @param <S> the backend's stream object
 * @param <E> the backend's event object
 */
public abstract class AbstractVirtualGpu<M, F, S, E> implements VirtualGpu {

    /** A loaded module with the image it came from and the variables looked up in it, by name. */
    protected record LoadedModule<M>(M module, ModuleImage image, Map<String, ModuleGlobal> globals) {}

    /**
     * A module variable as the app sees it, at {@code address} in the window's globals area, and
     * where the backend keeps it: a local GPU's address in its context, a worker's window address,
     * the emulation's host memory.
     */
    protected record ModuleGlobal(long address, long bytes, long backendAddress) {
        DeviceRegion region() {
            return new DeviceRegion(address, bytes);
        }
    }

    /**
     * The top of each window (1 GiB, less in a window under 2 GiB) holds the addresses of module
     * variables, never allocations: {@code moduleGetGlobal} gives a variable an address there, so
     * that the address is the runtime's, the same on every backend and kept by a migration (which
     * places it again with {@code moduleGetGlobalAt}), while the variable itself stays where its
     * module's code reads it. Copies and memsets at such an address go to the variable; a kernel
     * given it as a pointer would fault, since nothing is mapped there.
     */
    private static final long GLOBALS_AREA_BYTES = 1L << 30;

    /** Module variables' addresses are 256-byte aligned, as CUDA aligns them at most. */
    private static final long GLOBAL_ALIGNMENT = 256;

    /** A function with the signature launches are checked against. */
    protected record LoadedFunction<F>(F function, KernelSignature signature, int moduleId) {}

    /**
     * The chunks and allocations. Its lock is held from placing an allocation until its new chunk
     * is mapped (and from a free until an emptied chunk is unmapped), so that no other thread is
     * handed an address in a chunk not mapped yet; lookups take no lock.
     */
    private final DeviceMemory memory;
    /** Hands out module variables' addresses in the globals area; null where the window is too small for one. */
    private final WindowAllocator globalAddresses;
    /** The live module variables by their window address. */
    private final Map<Long, ModuleGlobal> globals = new ConcurrentHashMap<>();

    private final HandleTable<LoadedModule<M>> modules = new HandleTable<>("module");
    private final HandleTable<LoadedFunction<F>> functions = new HandleTable<>("function");
    private final HandleTable<S> streams = new HandleTable<>("stream");
    private final HandleTable<E> events = new HandleTable<>("event");
    /** Pinned host allocations by address, each freed by closing its arena. */
    private final Map<Long, Arena> hostAllocations = new ConcurrentHashMap<>();

    private volatile boolean closed;

    protected AbstractVirtualGpu(VaWindow window) {
        long area = Math.min(GLOBALS_AREA_BYTES, window.size() / 2 / VaWindow.GRANULARITY * VaWindow.GRANULARITY);
        this.memory = new DeviceMemory(window, area);
        this.globalAddresses = area == 0
                ? null
                : new WindowAllocator(new VaWindow(window.vgpuIndex(), window.end() - area, area), GLOBAL_ALIGNMENT);
    }

    @Override
    public final VaWindow window() {
        return memory.window();
    }

    /** The chunks and live allocations of this vGPU. */
    public final DeviceMemory memory() {
        return memory;
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

    protected abstract int doFuncGetAttribute(F function, FunctionAttribute attribute);

    /** Sets a settable attribute to a value within its range. */
    protected abstract void doFuncSetAttribute(F function, FunctionAttribute attribute, int value);

    /** The signature of a function from a non-PTX module; PTX signatures come from the text. */
    protected abstract KernelSignature doBinarySignature(F function, String kernelName);

    /**
     * Backs a chunk's range ({@code chunk.mappedBytes()} at {@code chunk.address()}) with device
     * memory. A chunk holds either allocations of at most {@link DeviceMemory#SHARED_LIMIT} bytes,
     * its requested bytes then being its own, or one larger allocation, whose requested bytes it
     * carries.
     */
    protected abstract void doMap(Allocation chunk);

    /**
     * Backs every chunk, all or none; one {@link #doMap} each, which a backend whose every call
     * crosses a network replaces by one request.
     */
    protected void doMapAll(List<Allocation> chunks) {
        int mapped = 0;
        try {
            for (Allocation chunk : chunks) {
                doMap(chunk);
                mapped++;
            }
        } catch (RuntimeException e) {
            throw unmapAfterFailure(chunks.subList(0, mapped), e);
        }
    }

    /** Unmaps the chunks a failed {@link #doMapAll} mapped before {@code failure}, which it returns. */
    protected final RuntimeException unmapAfterFailure(List<Allocation> mapped, RuntimeException failure) {
        for (Allocation chunk : mapped) {
            try {
                doUnmap(chunk);
            } catch (RuntimeException suppressed) {
                failure.addSuppressed(suppressed);
            }
        }
        return failure;
    }

    /**
     * Page-locked host memory of {@code bytes}, bound to {@code arena}: closing the arena must free
     * it, so that a segment used after {@link #memFreeHost} throws instead of touching freed memory.
     */
    protected abstract MemorySegment doAllocHost(long bytes, Arena arena);

    /** Frees a chunk's device memory; no allocation lies in it any more. */
    protected abstract void doUnmap(Allocation chunk);

    /**
     * An allocation inside a chunk that stays mapped was freed; its range is handed out again once
     * this returns (the memory lock is held meanwhile). A backend whose queued work may still read
     * or write it waits for that work here, as {@code cuMemFree} does. Nothing by default.
     */
    protected void doFreedInChunk() {}

    protected abstract void doMemcpyHtoD(long dst, MemorySegment src, long bytes, S stream, boolean async);

    protected abstract void doMemcpyDtoH(MemorySegment dst, long src, long bytes, S stream, boolean async);

    protected abstract void doMemcpyDtoD(long dst, long src, long bytes, S stream, boolean async);

    /**
     * Asynchronous copies of validated {@code regions} packed into {@code dst}; one copy per
     * region, which a backend whose every call crosses a network replaces by one request.
     */
    protected void doMemcpyDtoHGather(MemorySegment dst, List<DeviceRegion> regions, S stream) {
        long offset = 0;
        for (DeviceRegion region : regions) {
            doMemcpyDtoH(dst.asSlice(offset, region.bytes()), region.address(), region.bytes(), stream, true);
            offset += region.bytes();
        }
    }

    /**
     * Asynchronous copies of {@code src}, read back to back, into validated {@code regions}; one
     * copy per region, which a backend with a cheaper way for many regions replaces.
     */
    protected void doMemcpyHtoDScatter(List<DeviceRegion> regions, MemorySegment src, S stream) {
        long offset = 0;
        for (DeviceRegion region : regions) {
            doMemcpyHtoD(region.address(), src.asSlice(offset, region.bytes()), region.bytes(), stream, true);
            offset += region.bytes();
        }
    }

    /**
     * A validated 2D copy. Lowered here to one copy per row (one copy in all where both sides are
     * contiguous), queued on the default stream and then waited for, so that a remote vGPU sends
     * its rows back to back and waits once; the emulation and a remote worker's client use this, a
     * local GPU hands the whole copy to its driver.
     */
    protected void doMemcpy2D(PitchedMemory dst, PitchedMemory src, long widthBytes, long height) {
        S stream = defaultStream();
        boolean contiguous = dst.pitch() == widthBytes && src.pitch() == widthBytes;
        long rows = contiguous ? 1 : height;
        long rowBytes = contiguous ? widthBytes * height : widthBytes;
        for (long row = 0; row < rows; row++) {
            long dstOffset = row * dst.pitch();
            long srcOffset = row * src.pitch();
            switch (dst) {
                case PitchedMemory.Device to
                when src instanceof PitchedMemory.Device from ->
                    doMemcpyDtoD(to.address() + dstOffset, from.address() + srcOffset, rowBytes, stream, true);
                case PitchedMemory.Device to
                when src instanceof PitchedMemory.Host from ->
                    doMemcpyHtoD(
                            to.address() + dstOffset,
                            from.memory().asSlice(srcOffset, rowBytes),
                            rowBytes,
                            stream,
                            true);
                case PitchedMemory.Host to
                when src instanceof PitchedMemory.Device from ->
                    doMemcpyDtoH(
                            to.memory().asSlice(dstOffset, rowBytes),
                            from.address() + srcOffset,
                            rowBytes,
                            stream,
                            true);
                default -> throw new IllegalStateException("memcpy2D between two host buffers passed the checks");
            }
        }
        doStreamSynchronize(stream);
    }

    /** {@code elementSize} is 1, 2 or 4; {@code count} elements. */
    protected abstract void doMemset(long dst, int value, int elementSize, long count, S stream, boolean async);

    /**
     * A validated 2D memset of {@code height} rows of {@code width} 32-bit words, {@code pitch}
     * bytes apart, neither 0. Lowered here to one memset per row (one in all where the rows are
     * back to back), which the emulation uses; a local GPU hands it to its driver whole, and a
     * remote client sends it as one request.
     */
    protected void doMemsetD2D32(long dst, long pitch, int value, long width, long height) {
        memsetRows(dst, pitch, value, width, height, defaultStream(), false);
    }

    /** {@link #doMemsetD2D32}, queued on {@code stream}. */
    protected void doMemsetD2D32Async(long dst, long pitch, int value, long width, long height, S stream) {
        memsetRows(dst, pitch, value, width, height, stream, true);
    }

    private void memsetRows(long dst, long pitch, int value, long width, long height, S stream, boolean async) {
        if (pitch == width * Integer.BYTES) {
            doMemset(dst, value, Integer.BYTES, width * height, stream, async);
            return;
        }
        for (long row = 0; row < height; row++) {
            doMemset(dst + row * pitch, value, Integer.BYTES, width, stream, async);
        }
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

    @Override
    public int deviceGetAttribute(DeviceAttribute attribute) {
        ensureOpen();
        return doDeviceGetAttribute(given(attribute, "cuDeviceGetAttribute", "attribute"));
    }

    @Override
    public void ctxSetLimit(ContextLimit limit, long value) {
        ensureOpen();
        given(limit, "cuCtxSetLimit", "limit");
        if (value < 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "cuCtxSetLimit: " + limit + " of " + value + " bytes is negative");
        }
        doCtxSetLimit(limit, value);
    }

    @Override
    public long ctxGetLimit(ContextLimit limit) {
        ensureOpen();
        return doCtxGetLimit(given(limit, "cuCtxGetLimit", "limit"));
    }

    /** {@code operand}, which {@code call} needs: CUDA_ERROR_INVALID_VALUE when it is null. */
    private static <T> T given(T operand, String call, String what) {
        if (operand == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, call + ": the " + what + " is null");
        }
        return operand;
    }

    @Override
    public ModuleHandle moduleLoadData(byte[] image) {
        ensureOpen();
        ModuleImage parsed = ModuleImage.parse(image);
        M module = doModuleLoad(parsed);
        return new ModuleHandle(modules.add(new LoadedModule<>(module, parsed, new ConcurrentHashMap<>())));
    }

    @Override
    public void moduleUnload(ModuleHandle module) {
        ensureOpen();
        LoadedModule<M> unloaded = modules.remove(module.id());
        forgetGlobals(unloaded);
        doModuleUnload(unloaded.module());
    }

    @Override
    public DeviceRegion moduleGetGlobal(ModuleHandle module, String name) {
        return placeGlobal(module, name, null);
    }

    @Override
    public DeviceRegion moduleGetGlobalAt(ModuleHandle module, String name, long address) {
        return placeGlobal(module, name, address);
    }

    /**
     * The variable's window address: the one it already has (as CUDA answers the same address each
     * time), or a new one, first fit in the globals area or at {@code at}. Serialised per module, so
     * that two threads asking at once get one address.
     */
    private DeviceRegion placeGlobal(ModuleHandle module, String name, Long at) {
        ensureOpen();
        LoadedModule<M> loaded = modules.get(module.id());
        if (name == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "cuModuleGetGlobal: the name is null");
        }
        synchronized (loaded) {
            ModuleGlobal known = loaded.globals().get(name);
            if (known != null) {
                if (at != null && known.address() != at) {
                    throw new VgpuException(
                            ErrorCode.CUDA_ERROR_INVALID_VALUE,
                            String.format(
                                    "module variable %s already has address 0x%x, not 0x%x",
                                    name, known.address(), at));
                }
                return known.region();
            }
            DeviceRegion backend = doModuleGetGlobal(loaded.module(), name);
            if (globalAddresses == null) {
                throw new VgpuException(
                        ErrorCode.VGPU_WINDOW_FULL, "window " + window() + " is too small for module variables");
            }
            long address = (at == null
                            ? globalAddresses.allocate(backend.bytes())
                            : globalAddresses.allocateAt(at, backend.bytes()))
                    .address();
            ModuleGlobal global = new ModuleGlobal(address, backend.bytes(), backend.address());
            loaded.globals().put(name, global);
            globals.put(address, global);
            return global.region();
        }
    }

    private void forgetGlobals(LoadedModule<M> module) {
        synchronized (module) {
            for (ModuleGlobal global : module.globals().values()) {
                globals.remove(global.address());
                globalAddresses.release(global.address());
            }
            module.globals().clear();
        }
    }

    /**
     * The backend's address for {@code [address, address + bytes)} of device memory: a module
     * variable's own where the range lies in one, else the address itself, which must then lie in a
     * live allocation (CUDA_ERROR_INVALID_VALUE otherwise, naming {@code what}).
     */
    private long deviceAddress(long address, long bytes, String what) {
        if (globalAddresses != null && address >= globalAddresses.window().base()) {
            Allocation placed = globalAddresses.holding(address);
            ModuleGlobal global = placed == null ? null : globals.get(placed.address());
            if (global != null && placed.contains(address, bytes)) {
                return global.backendAddress() + (address - global.address());
            }
        }
        memory.require(address, bytes, what);
        return address;
    }

    @Override
    public FunctionHandle moduleGetFunction(ModuleHandle module, String kernelName) {
        ensureOpen();
        LoadedModule<M> loaded = modules.get(module.id());
        boolean ptx = loaded.image().format() == ModuleImage.Format.PTX;
        KernelSignature ptxSignature = ptx ? loaded.image().ptxSignature(kernelName) : null;
        F function = doGetFunction(loaded.module(), kernelName);
        KernelSignature signature = ptx ? ptxSignature : doBinarySignature(function, kernelName);
        return new FunctionHandle(functions.add(new LoadedFunction<>(function, signature, module.id())), kernelName);
    }

    @Override
    public int funcGetAttribute(FunctionAttribute attribute, FunctionHandle function) {
        ensureOpen();
        if (attribute == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "cuFuncGetAttribute: the attribute is null");
        }
        return doFuncGetAttribute(functions.get(function.id()).function(), attribute);
    }

    @Override
    public void funcSetAttribute(FunctionHandle function, FunctionAttribute attribute, int value) {
        ensureOpen();
        F loaded = functions.get(function.id()).function();
        if (attribute == null || !attribute.settable()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "cuFuncSetAttribute: " + attribute + " cannot be set; MAX_DYNAMIC_SHARED_SIZE_BYTES and"
                            + " PREFERRED_SHARED_MEMORY_CARVEOUT can");
        }
        int low = attribute == FunctionAttribute.PREFERRED_SHARED_MEMORY_CARVEOUT ? -1 : 0;
        int high = attribute == FunctionAttribute.PREFERRED_SHARED_MEMORY_CARVEOUT
                ? 100
                : doDeviceGetAttribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        if (value < low || value > high) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "cuFuncSetAttribute: " + attribute + " of " + function.name() + " must be within [" + low + ", "
                            + high + "], got " + value);
        }
        doFuncSetAttribute(loaded, attribute, value);
    }

    @Override
    public KernelSignature functionSignature(FunctionHandle function) {
        ensureOpen();
        return functions.get(function.id()).signature();
    }

    @Override
    public long memAlloc(long bytes) {
        ensureOpen();
        synchronized (memory) {
            DeviceMemory.Placement placement = memory.allocate(bytes);
            mapNewChunks(List.of(placement));
            return placement.allocation().address();
        }
    }

    @Override
    public void memAllocAt(long address, long bytes) {
        ensureOpen();
        synchronized (memory) {
            mapNewChunks(List.of(memory.allocateAt(address, bytes)));
        }
    }

    @Override
    public void memAllocAllAt(List<DeviceRegion> allocations) {
        ensureOpen();
        if (allocations == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "memAllocAllAt: the allocations are null");
        }
        synchronized (memory) {
            mapNewChunks(memory.placeAll(List.copyOf(allocations)));
        }
    }

    /** Maps the chunks that {@code placements} opened, all at once; on failure takes the placements back. */
    private void mapNewChunks(List<DeviceMemory.Placement> placements) {
        List<Allocation> chunks = placements.stream()
                .map(DeviceMemory.Placement::newChunk)
                .filter(Objects::nonNull)
                .toList();
        try {
            // one chunk, as an allocation mostly needs, through the one-chunk primitive (a worker's MEM_ALLOC_AT)
            switch (chunks.size()) {
                case 0 -> {}
                case 1 -> doMap(chunks.getFirst());
                default -> doMapAll(chunks);
            }
        } catch (RuntimeException e) {
            memory.undo(placements);
            throw e;
        }
    }

    /** Frees the allocation, and its chunk once no allocation is left in it. */
    @Override
    public void memFree(long address) {
        ensureOpen();
        synchronized (memory) {
            Allocation emptied = memory.free(address).emptiedChunk();
            if (emptied != null) {
                unmapAndReclaim(emptied);
            } else {
                doFreedInChunk();
            }
        }
    }

    /**
     * Unmaps, then lets the range be allocated again. A range whose unmap failed is never handed
     * out again: it may still be mapped, and a later map there would fail or alias.
     */
    private void unmapAndReclaim(Allocation chunk) {
        doUnmap(chunk);
        memory.reclaim(chunk);
    }

    @Override
    public final DeviceRegion memGetAddressRange(long address) {
        ensureOpen();
        DeviceRegion range = rangeHolding(address);
        if (range == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_FOUND,
                    String.format(
                            "cuMemGetAddressRange: 0x%x is not inside a live allocation of vGPU %d",
                            address, vgpuIndex()));
        }
        return range;
    }

    @Override
    public final long pointerGetAttribute(PointerAttribute attribute, long address) {
        ensureOpen();
        if (attribute == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute: the attribute is null");
        }
        DeviceRegion range = rangeHolding(address);
        if (range == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    String.format(
                            "cuPointerGetAttribute: 0x%x is not inside a live allocation of vGPU %d",
                            address, vgpuIndex()));
        }
        return switch (attribute) {
            case MEMORY_TYPE -> PointerAttribute.MEMORY_TYPE_DEVICE;
            case DEVICE_POINTER -> address;
            case IS_MANAGED -> 0;
            case DEVICE_ORDINAL -> vgpuIndex();
            case RANGE_START_ADDR -> range.address();
            case RANGE_SIZE -> range.bytes();
            case MAPPED -> 1;
        };
    }

    /** The live allocation or module variable holding {@code address}, as the app asked for it; null when there is none. */
    private DeviceRegion rangeHolding(long address) {
        Allocation allocation = memory.holding(address);
        if (allocation == null && globalAddresses != null) {
            allocation = globalAddresses.holding(address);
        }
        return allocation == null ? null : new DeviceRegion(allocation.address(), allocation.requestedBytes());
    }

    @Override
    public MemorySegment memAllocHost(long bytes) {
        ensureOpen();
        if (bytes <= 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE, "host allocation size must be > 0, got " + bytes);
        }
        Arena arena = Arena.ofShared();
        MemorySegment segment;
        try {
            segment = doAllocHost(bytes, arena);
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
        hostAllocations.put(segment.address(), arena);
        return segment;
    }

    @Override
    public void memFreeHost(MemorySegment hostMemory) {
        ensureOpen();
        Arena arena = hostMemory == null ? null : hostAllocations.remove(hostMemory.address());
        if (arena == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE, "host memory was not allocated by memAllocHost of this vGPU");
        }
        arena.close();
    }

    @Override
    public void memcpyHtoD(long dstDevice, MemorySegment srcHost, long byteCount) {
        long dst = checkHtoD(dstDevice, srcHost, byteCount, false);
        doMemcpyHtoD(dst, srcHost, byteCount, defaultStream(), false);
    }

    @Override
    public void memcpyDtoH(MemorySegment dstHost, long srcDevice, long byteCount) {
        long src = checkDtoH(dstHost, srcDevice, byteCount, false);
        doMemcpyDtoH(dstHost, src, byteCount, defaultStream(), false);
    }

    @Override
    public void memcpyDtoD(long dstDevice, long srcDevice, long byteCount) {
        ensureOpen();
        copyDtoD(dstDevice, srcDevice, byteCount, defaultStream(), false);
    }

    @Override
    public void memcpyHtoDAsync(long dstDevice, MemorySegment srcHost, long byteCount, StreamHandle stream) {
        long dst = checkHtoD(dstDevice, srcHost, byteCount, true);
        doMemcpyHtoD(dst, srcHost, byteCount, stream(stream), true);
    }

    @Override
    public void memcpyDtoHAsync(MemorySegment dstHost, long srcDevice, long byteCount, StreamHandle stream) {
        long src = checkDtoH(dstHost, srcDevice, byteCount, true);
        doMemcpyDtoH(dstHost, src, byteCount, stream(stream), true);
    }

    @Override
    public void memcpyDtoDAsync(long dstDevice, long srcDevice, long byteCount, StreamHandle stream) {
        copyDtoD(dstDevice, srcDevice, byteCount, stream(stream), true);
    }

    private void copyDtoD(long dstDevice, long srcDevice, long bytes, S stream, boolean async) {
        checkCount(bytes);
        long dst = deviceAddress(dstDevice, bytes, "memcpyDtoD destination");
        long src = deviceAddress(srcDevice, bytes, "memcpyDtoD source");
        doMemcpyDtoD(dst, src, bytes, stream, async);
    }

    @Override
    public void memcpyDtoHGatherAsync(MemorySegment dstHost, List<DeviceRegion> srcRegions, StreamHandle stream) {
        List<DeviceRegion> regions = checkRegionCopy("memcpyDtoHGather", srcRegions, dstHost, true);
        doMemcpyDtoHGather(dstHost, regions, stream(stream));
    }

    @Override
    public void memcpyHtoDScatterAsync(List<DeviceRegion> dstRegions, MemorySegment srcHost, StreamHandle stream) {
        List<DeviceRegion> regions = checkRegionCopy("memcpyHtoDScatter", dstRegions, srcHost, false);
        doMemcpyHtoDScatter(regions, srcHost, stream(stream));
    }

    @Override
    public void memcpy2D(PitchedMemory dst, PitchedMemory src, long widthBytes, long height) {
        ensureOpen();
        if (dst == null || src == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "memcpy2D source or destination is null");
        }
        if (dst instanceof PitchedMemory.Host && src instanceof PitchedMemory.Host) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "memcpy2D between two host buffers is no device copy; vgpu copies to, from or within device memory");
        }
        if (widthBytes < 0 || height < 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "memcpy2D width " + widthBytes + " and height " + height + " must be >= 0");
        }
        PitchedMemory to = checkPitchedSide(dst, widthBytes, height, "destination");
        PitchedMemory from = checkPitchedSide(src, widthBytes, height, "source");
        if (widthBytes > 0 && height > 0) {
            doMemcpy2D(to, from, widthBytes, height);
        }
    }

    /**
     * The side's pitch holds a row, and its rows lie in one live allocation (or module variable) or
     * in its host buffer; returns the side with the backend's device address.
     */
    private PitchedMemory checkPitchedSide(PitchedMemory side, long widthBytes, long height, String role) {
        if (side.pitch() < widthBytes) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "memcpy2D " + role + " pitch " + side.pitch() + " is smaller than the width " + widthBytes);
        }
        long extent;
        try {
            extent = height == 0 || widthBytes == 0
                    ? 0
                    : Math.addExact(Math.multiplyExact(side.pitch(), height - 1), widthBytes);
        } catch (ArithmeticException e) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "memcpy2D " + role + " of " + height + " rows of pitch " + side.pitch() + " is too large");
        }
        switch (side) {
            case PitchedMemory.Device device -> {
                return new PitchedMemory.Device(
                        deviceAddress(device.address(), extent, "memcpy2D " + role), device.pitch());
            }
            case PitchedMemory.Host host
            when role.equals("destination") -> checkHostDestination(host.memory(), extent, false);
            case PitchedMemory.Host host -> checkHost(host.memory(), extent, false, role);
        }
        return side;
    }

    @Override
    public void memsetD8(long dstDevice, byte value, long count) {
        long dst = checkMemset(dstDevice, 1, count, "memsetD8");
        doMemset(dst, value, 1, count, defaultStream(), false);
    }

    @Override
    public void memsetD32(long dstDevice, int value, long count) {
        long dst = checkMemset(dstDevice, 4, count, "memsetD32");
        doMemset(dst, value, 4, count, defaultStream(), false);
    }

    @Override
    public void memsetD16(long dstDevice, short value, long count) {
        long dst = checkMemset(dstDevice, 2, count, "memsetD16");
        doMemset(dst, Short.toUnsignedInt(value), 2, count, defaultStream(), false);
    }

    @Override
    public void memsetD16Async(long dstDevice, short value, long count, StreamHandle stream) {
        long dst = checkMemset(dstDevice, 2, count, "memsetD16Async");
        doMemset(dst, Short.toUnsignedInt(value), 2, count, stream(stream), true);
    }

    @Override
    public void memsetD2D32(long dstDevice, long pitch, int value, long width, long height) {
        long dst = checkMemsetD2D32(dstDevice, pitch, width, height, "memsetD2D32");
        if (width > 0 && height > 0) {
            doMemsetD2D32(dst, rowPitch(pitch, width, height), value, width, height);
        }
    }

    @Override
    public void memsetD2D32Async(long dstDevice, long pitch, int value, long width, long height, StreamHandle stream) {
        long dst = checkMemsetD2D32(dstDevice, pitch, width, height, "memsetD2D32Async");
        S backendStream = stream(stream);
        if (width > 0 && height > 0) {
            doMemsetD2D32Async(dst, rowPitch(pitch, width, height), value, width, height, backendStream);
        }
    }

    /** The pitch a backend is given: one row's own when there is one row, whose pitch CUDA leaves unused. */
    private static long rowPitch(long pitch, long width, long height) {
        return height == 1 ? width * Integer.BYTES : pitch;
    }

    /**
     * The rows' words lie in one live allocation (or module variable) and a pitch of more than one
     * row holds a row, 4-byte aligned; returns the backend's address of the first row.
     */
    private long checkMemsetD2D32(long dstDevice, long pitch, long width, long height, String what) {
        ensureOpen();
        if (width < 0 || height < 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    what + " width " + width + " and height " + height + " must be >= 0");
        }
        long words;
        try {
            long rowBytes = Math.multiplyExact(width, Integer.BYTES);
            if (height > 1 && (pitch < rowBytes || pitch % Integer.BYTES != 0)) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        what + " pitch " + pitch + " does not hold a row of " + width
                                + " words, or is not a multiple of 4");
            }
            words = width == 0 || height == 0
                    ? 0
                    : Math.addExact(Math.multiplyExact(pitch, height - 1), rowBytes) / Integer.BYTES;
        } catch (ArithmeticException e) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    what + " of " + height + " rows of pitch " + pitch + " is too large");
        }
        return checkMemset(dstDevice, Integer.BYTES, words, what);
    }

    @Override
    public void memsetD8Async(long dstDevice, byte value, long count, StreamHandle stream) {
        long dst = checkMemset(dstDevice, 1, count, "memsetD8Async");
        doMemset(dst, value, 1, count, stream(stream), true);
    }

    @Override
    public void memsetD32Async(long dstDevice, int value, long count, StreamHandle stream) {
        long dst = checkMemset(dstDevice, 4, count, "memsetD32Async");
        doMemset(dst, value, 4, count, stream(stream), true);
    }

    @Override
    public void launchKernel(
            FunctionHandle function, Dim3 grid, Dim3 block, int sharedMemBytes, StreamHandle stream, KernelArgs args) {
        ensureOpen();
        LoadedFunction<F> loaded = functions.get(function.id());
        loaded.signature().check(args);
        if (sharedMemBytes < 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE, "shared memory size must be >= 0, got " + sharedMemBytes);
        }
        if (block.count() > deviceProperties().maxThreadsPerBlock()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "block of " + block.count() + " threads exceeds the device's "
                            + deviceProperties().maxThreadsPerBlock());
        }
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
        functions.drain();
        for (LoadedModule<M> module : modules.drain()) {
            forgetGlobals(module);
            failures.attempt(() -> doModuleUnload(module.module()));
        }
        for (Allocation chunk : memory.retireAll()) {
            failures.attempt(() -> doUnmap(chunk));
        }
        for (Long address : List.copyOf(hostAllocations.keySet())) {
            Arena arena = hostAllocations.remove(address);
            if (arena != null) {
                failures.attempt(arena::close);
            }
        }
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

    /** The backend's stream for {@code stream}, the default one for null or {@link StreamHandle#DEFAULT}. */
    protected final S stream(StreamHandle stream) {
        ensureOpen();
        if (stream == null || stream.id() == StreamHandle.DEFAULT.id()) {
            return defaultStream();
        }
        return streams.get(stream.id());
    }

    /** Returns the backend's destination address. */
    private long checkHtoD(long dst, MemorySegment src, long bytes, boolean async) {
        ensureOpen();
        checkHost(src, bytes, async, "source");
        return deviceAddress(dst, bytes, "memcpyHtoD destination");
    }

    /** Returns the backend's source address. */
    private long checkDtoH(MemorySegment dst, long src, long bytes, boolean async) {
        checkHostDestination(dst, bytes, async);
        return deviceAddress(src, bytes, "memcpyDtoH source");
    }

    /**
     * Checks an asynchronous copy between {@code host}, packed, and many device regions, which must
     * each lie in a live allocation or module variable; returns the regions as an immutable copy,
     * with the backend's addresses for module variables.
     */
    private List<DeviceRegion> checkRegionCopy(
            String call, List<DeviceRegion> regions, MemorySegment host, boolean toHost) {
        ensureOpen();
        if (regions == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, call + " regions are null");
        }
        List<DeviceRegion> copy = List.copyOf(regions);
        long bytes = DeviceRegion.totalBytes(copy);
        if (toHost) {
            checkHostDestination(host, bytes, true);
        } else {
            checkHost(host, bytes, true, "source");
        }
        return backendRegions(copy, call + (toHost ? " source" : " destination"));
    }

    @Override
    public final void checkDeviceRegions(List<DeviceRegion> regions, String what) {
        ensureOpen();
        if (regions == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, what + " regions are null");
        }
        backendRegions(regions, what);
    }

    /**
     * Checks that each of {@code regions} lies in a live allocation or module variable; returns them
     * with the backend's addresses for module variables.
     */
    private List<DeviceRegion> backendRegions(List<DeviceRegion> regions, String what) {
        if (globalAddresses == null
                || regions.stream()
                        .noneMatch(region ->
                                region.address() >= globalAddresses.window().base())) {
            memory.requireAll(regions, what);
            return regions;
        }
        // a worker serves copies of module variables with these too: each region to its backend address
        return regions.stream()
                .map(region -> new DeviceRegion(deviceAddress(region.address(), region.bytes(), what), region.bytes()))
                .toList();
    }

    private void checkHostDestination(MemorySegment dst, long bytes, boolean async) {
        ensureOpen();
        checkHost(dst, bytes, async, "destination");
        if (dst.isReadOnly()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE, "memcpyDtoH destination is read-only host memory");
        }
    }

    /** Returns the backend's destination address. */
    private long checkMemset(long dst, int elementSize, long count, String what) {
        ensureOpen();
        checkCount(count);
        if (dst % elementSize != 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    String.format("%s destination 0x%x is not %d-byte aligned", what, dst, elementSize));
        }
        if (count > Long.MAX_VALUE / elementSize) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, what + " count " + count + " is too large");
        }
        return deviceAddress(dst, count * elementSize, what + " destination");
    }

    private static void checkHost(MemorySegment host, long bytes, boolean async, String role) {
        checkCount(bytes);
        if (host == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "host " + role + " is null");
        }
        if (host.byteSize() < bytes) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "host " + role + " holds " + host.byteSize() + " bytes, the copy needs " + bytes);
        }
        if (async && !host.isNative()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "asynchronous copies need native host memory"
                            + " (memAllocHost or an Arena); a Java heap array may move before the copy runs");
        }
    }

    private static void checkCount(long bytes) {
        if (bytes < 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "byte count must be >= 0, got " + bytes);
        }
    }
}
