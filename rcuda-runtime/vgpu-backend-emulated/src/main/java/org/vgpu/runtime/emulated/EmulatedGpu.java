package org.vgpu.runtime.emulated;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelNames;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.core.AbstractVirtualGpu;
import org.vgpu.runtime.core.ModuleImage;
import org.vgpu.runtime.memory.Allocation;

/**
 * One vGPU of the CPU emulation. Work is executed when it is issued, on the calling thread, so
 * every stream is trivially in order. As on a GPU, a fault inside a kernel (a twin touching memory
 * outside the live allocations) is not thrown by the launch but by the next synchronizing call;
 * unlike a GPU, the error is reported once and the vGPU stays usable.
 */
final class EmulatedGpu
        extends AbstractVirtualGpu<EmulatedGpu.Module, EmulatedGpu.Function, EmulatedGpu.Stream, EmulatedGpu.Event>
        implements EmulatedMemory {

    /**
     * A module with its functions, so that every lookup of a kernel shares its attributes, as in
     * CUDA, and its variables ({@code .global} and {@code .const} in the PTX, initialised as
     * declared) in host memory of {@code arena}, freed at unload.
     */
    record Module(
            ModuleImage image, Map<String, Function> functions, Arena arena, Map<String, MemorySegment> globals) {}

    /** A kernel with the attributes a program may set. */
    static final class Function {
        final String name;
        final Module module;
        volatile int maxDynamicSharedBytes = SHARED_MEMORY_PER_BLOCK;
        volatile int preferredSharedCarveout = -1;

        Function(String name, Module module) {
            this.name = name;
            this.module = module;
        }
    }

    /** What a twin of one of the module's kernels sees: the vGPU's memory and the module's variables. */
    private record ModuleMemory(EmulatedGpu gpu, Module module) implements EmulatedMemory {
        @Override
        public MemorySegment segment(long address, long bytes) {
            return gpu.segment(address, bytes);
        }

        @Override
        public MemorySegment global(String name) {
            MemorySegment global = module.globals().get(name);
            if (global == null) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS,
                        "CPU emulation: kernel read module variable " + name + ", which its module does not define");
            }
            return global;
        }
    }

    static final class Stream {}

    static final class Event {
        /** System.nanoTime() of the last record; -1 before the first. */
        volatile long recordedAtNanos = -1;
    }

    private static final Stream DEFAULT_STREAM = new Stream();

    /** Shared memory a block may use without opting in, as on every GPU since Volta. */
    private static final int SHARED_MEMORY_PER_BLOCK = 48 * 1024;

    /** An A100's most shared memory per block once a kernel opts in (163 KiB). */
    private static final int SHARED_MEMORY_PER_BLOCK_OPTIN = 163 * 1024;

    private final DeviceProperties properties;
    private final AtomicLong deviceUsedBytes;
    private final KernelTwinRegistry twins;
    /** Host memory behind each live allocation, by device address. */
    private final ConcurrentSkipListMap<Long, Backing> backing = new ConcurrentSkipListMap<>();

    private final AtomicReference<VgpuException> pendingKernelFault = new AtomicReference<>();
    /** The limits set on this vGPU; the others have CUDA's defaults. */
    private final Map<ContextLimit, Long> limits = new ConcurrentHashMap<>();

    private record Backing(Arena arena, MemorySegment segment, long address) {}

    EmulatedGpu(VaWindow window, DeviceProperties properties, AtomicLong deviceUsedBytes, KernelTwinRegistry twins) {
        super(window);
        this.properties = properties;
        this.deviceUsedBytes = deviceUsedBytes;
        this.twins = twins;
    }

    @Override
    public String backendName() {
        return EmulatedBackend.NAME;
    }

    @Override
    public DeviceProperties deviceProperties() {
        return properties;
    }

    @Override
    public MemoryInfo memGetInfo() {
        ensureOpen();
        return new MemoryInfo(properties.totalMemory() - deviceUsedBytes.get(), properties.totalMemory());
    }

    /**
     * Takes every value as set: the kernels' Java twins draw on no device stack, printf FIFO or heap,
     * so nothing here needs rounding or room.
     */
    @Override
    protected void doCtxSetLimit(ContextLimit limit, long value) {
        limits.put(limit, value);
    }

    @Override
    protected long doCtxGetLimit(ContextLimit limit) {
        return limits.getOrDefault(limit, limit.cudaDefault());
    }

    /**
     * Fixed figures, the same on every host: the device's own properties where it has them (compute
     * capability 8.0, 1024 threads per block, warp 32, as many SMs as the host has cores), an A100's
     * (SXM4, 40 GB), the GPU of compute capability 8.0, for the limits a program sizes its work by
     * (block and grid dimensions, shared memory, registers, constant memory, pitch, textures and
     * surfaces, clocks, bus width, L2), and 0 for what the emulation has not: no PCI device, ECC,
     * copy engines running beside kernels, stream priorities, preemption, cooperative or cluster
     * launches, memory pools, virtual memory management, IPC, NUMA (its ids are -1) or
     * interoperability. The emulation enforces the thread and shared-memory limits at launch.
     * README (the call table) lists the figures.
     */
    @Override
    protected int doDeviceGetAttribute(DeviceAttribute attribute) {
        return switch (attribute) {
            case MAX_THREADS_PER_BLOCK -> properties.maxThreadsPerBlock();
            case WARP_SIZE -> properties.warpSize();
            case MULTIPROCESSOR_COUNT -> properties.multiprocessorCount();
            case COMPUTE_CAPABILITY_MAJOR -> properties.computeCapabilityMajor();
            case COMPUTE_CAPABILITY_MINOR -> properties.computeCapabilityMinor();
            case MAX_BLOCK_DIM_X, MAX_BLOCK_DIM_Y -> 1024;
            case MAX_BLOCK_DIM_Z -> 64;
            case MAX_GRID_DIM_X, MAX_PITCH -> Integer.MAX_VALUE;
            case MAX_GRID_DIM_Y, MAX_GRID_DIM_Z -> 65535;
            case MAX_SHARED_MEMORY_PER_BLOCK -> SHARED_MEMORY_PER_BLOCK;
            case MAX_SHARED_MEMORY_PER_BLOCK_OPTIN -> SHARED_MEMORY_PER_BLOCK_OPTIN;
            case MAX_SHARED_MEMORY_PER_MULTIPROCESSOR -> 164 * 1024;
            case RESERVED_SHARED_MEMORY_PER_BLOCK -> 1024;
            case TOTAL_CONSTANT_MEMORY, MAX_REGISTERS_PER_BLOCK, MAX_REGISTERS_PER_MULTIPROCESSOR -> 64 * 1024;
            case MAX_THREADS_PER_MULTIPROCESSOR -> 2048;
            case MAX_BLOCKS_PER_MULTIPROCESSOR -> 32;
            case CLOCK_RATE -> 1_410_000;
            case MEMORY_CLOCK_RATE -> 1_215_000;
            case GLOBAL_MEMORY_BUS_WIDTH -> 5120;
            case L2_CACHE_SIZE -> 40 * 1024 * 1024;
            case SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO -> 2;
            case CONCURRENT_KERNELS,
                    UNIFIED_ADDRESSING,
                    GLOBAL_L1_CACHE_SUPPORTED,
                    LOCAL_L1_CACHE_SUPPORTED,
                    MEM_SYNC_DOMAIN_COUNT -> 1;
            case TEXTURE_ALIGNMENT, SURFACE_ALIGNMENT -> 512;
            case TEXTURE_PITCH_ALIGNMENT -> 32;
            case MAXIMUM_TEXTURE1D_WIDTH,
                    MAXIMUM_TEXTURE2D_WIDTH,
                    MAXIMUM_SURFACE2D_WIDTH,
                    MAXIMUM_TEXTURE2D_LINEAR_WIDTH -> 131_072;
            case MAXIMUM_TEXTURE2D_HEIGHT, MAXIMUM_SURFACE2D_HEIGHT -> 65_536;
            case MAXIMUM_TEXTURE2D_LINEAR_HEIGHT -> 65_000;
            case MAXIMUM_TEXTURE2D_LINEAR_PITCH -> 2_097_120;
            case MAXIMUM_TEXTURE1D_LINEAR_WIDTH -> 268_435_456;
            case MAXIMUM_TEXTURE3D_WIDTH,
                    MAXIMUM_TEXTURE3D_HEIGHT,
                    MAXIMUM_TEXTURE3D_DEPTH,
                    MAXIMUM_SURFACE3D_WIDTH,
                    MAXIMUM_SURFACE3D_HEIGHT,
                    MAXIMUM_SURFACE3D_DEPTH -> 16_384;
            case MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE, MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE -> 8192;
            case MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE,
                    MAXIMUM_TEXTURE2D_LAYERED_WIDTH,
                    MAXIMUM_TEXTURE2D_LAYERED_HEIGHT,
                    MAXIMUM_TEXTURE1D_LAYERED_WIDTH,
                    MAXIMUM_TEXTURE2D_GATHER_WIDTH,
                    MAXIMUM_TEXTURE2D_GATHER_HEIGHT,
                    MAXIMUM_TEXTURECUBEMAP_WIDTH,
                    MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH,
                    MAXIMUM_SURFACE1D_WIDTH,
                    MAXIMUM_SURFACE1D_LAYERED_WIDTH,
                    MAXIMUM_SURFACE2D_LAYERED_WIDTH,
                    MAXIMUM_SURFACE2D_LAYERED_HEIGHT,
                    MAXIMUM_SURFACECUBEMAP_WIDTH,
                    MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH,
                    MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH,
                    MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT,
                    MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH -> 32_768;
            case MAXIMUM_TEXTURE2D_LAYERED_LAYERS,
                    MAXIMUM_TEXTURE1D_LAYERED_LAYERS,
                    MAXIMUM_SURFACE1D_LAYERED_LAYERS,
                    MAXIMUM_SURFACE2D_LAYERED_LAYERS -> 2048;
            case MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS, MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS -> 2046;
            case NUMA_ID, HOST_NUMA_ID -> -1;
            default -> 0;
        };
    }

    // ---- EmulatedMemory, for twins

    /**
     * Stricter than a GPU: a kernel's access must lie in one live allocation, not merely in mapped
     * memory, so a twin that overruns a small allocation into its chunk's neighbour faults here
     * where a GPU would let it pass.
     */
    @Override
    public MemorySegment segment(long address, long bytes) {
        MemorySegment segment = inAllocationOrElsewhere(address, bytes) ? mapped(address, bytes) : null;
        return segment != null ? segment : illegalAccess("kernel accessed", address, bytes);
    }

    /**
     * The memory a copy or memset reaches: its operands were checked before they got here, so it
     * need only be mapped, and a migration's copy may span adjacent allocations of one chunk.
     */
    private MemorySegment operand(long address, long bytes) {
        MemorySegment segment = mapped(address, bytes);
        return segment != null ? segment : illegalAccess("copy reached", address, bytes);
    }

    private MemorySegment illegalAccess(String what, long address, long bytes) {
        throw new VgpuException(
                ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS,
                String.format(
                        "CPU emulation: %s 0x%x (+%d bytes), outside every live allocation of vGPU %d",
                        what, address, bytes, vgpuIndex()));
    }

    /** The host memory behind a range of one chunk or module variable; null where none holds all of it. */
    private MemorySegment mapped(long address, long bytes) {
        Map.Entry<Long, Backing> entry = backing.floorEntry(address);
        if (entry == null) {
            return null;
        }
        MemorySegment segment = entry.getValue().segment();
        long offset = address - entry.getKey();
        return bytes >= 0 && offset + bytes <= segment.byteSize() && offset + bytes >= offset
                ? segment.asSlice(offset, bytes)
                : null;
    }

    /** Whether a window address's range lies in one live allocation; host addresses (module variables') pass. */
    private boolean inAllocationOrElsewhere(long address, long bytes) {
        if (!window().contains(address, 0)) {
            return true;
        }
        Allocation allocation = memory().holding(address);
        return allocation != null && allocation.contains(address, bytes);
    }

    // ---- modules

    @Override
    protected Module doModuleLoad(ModuleImage loaded) {
        ModuleImage image = loaded.format() == ModuleImage.Format.FATBIN
                ? ModuleImage.parse(FatbinPtx.newest(loaded.bytes())
                        .orElseThrow(() -> new VgpuException(
                                ErrorCode.CUDA_ERROR_NOT_SUPPORTED,
                                "CPU emulation reads a fatbin's kernels from its PTX, and this fatbin carries none")))
                : loaded;
        if (image.format() != ModuleImage.Format.PTX) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_SUPPORTED,
                    "CPU emulation loads PTX modules and fatbins with PTX only (their kernels run as Java twins), got a "
                            + image.format());
        }
        Arena arena = Arena.ofShared();
        Map<String, MemorySegment> globals = new ConcurrentHashMap<>();
        for (ModuleImage.PtxGlobal global : image.ptxGlobals().values()) {
            MemorySegment memory = arena.allocate(global.bytes(), 16);
            MemorySegment.copy(MemorySegment.ofArray(global.initialValue()), 0, memory, 0, global.bytes());
            globals.put(global.name(), memory);
            // copies reach a variable by its host address, as they reach allocations by theirs
            backing.put(memory.address(), new Backing(arena, memory, memory.address()));
        }
        return new Module(image, new ConcurrentHashMap<>(), arena, globals);
    }

    @Override
    protected void doModuleUnload(Module module) {
        for (MemorySegment global : module.globals().values()) {
            backing.remove(global.address());
        }
        module.arena().close();
    }

    /** The variable's host memory stands for its device address. */
    @Override
    protected DeviceRegion doModuleGetGlobal(Module module, String name) {
        module.image().ptxGlobal(name);
        MemorySegment global = module.globals().get(name);
        return new DeviceRegion(global.address(), global.byteSize());
    }

    @Override
    protected KernelNames doModuleKernelNames(Module module) {
        return new KernelNames(List.copyOf(module.image().ptxKernels().keySet()));
    }

    @Override
    protected Function doGetFunction(Module module, String kernelName) {
        return module.functions().computeIfAbsent(kernelName, name -> new Function(name, module));
    }

    /**
     * The emulation compiles nothing, so the figures are fixed: the device's thread limit, no
     * static shared, constant or local memory it could know of, 32 registers, PTX 8.0 and a binary
     * for the emulated compute capability; the settable ones as last set.
     */
    @Override
    protected int doFuncGetAttribute(Function function, FunctionAttribute attribute) {
        return switch (attribute) {
            case MAX_THREADS_PER_BLOCK -> properties.maxThreadsPerBlock();
            case SHARED_SIZE_BYTES, CONST_SIZE_BYTES, LOCAL_SIZE_BYTES -> 0;
            case NUM_REGS -> 32;
            case PTX_VERSION -> 80;
            case BINARY_VERSION -> properties.computeCapabilityMajor() * 10 + properties.computeCapabilityMinor();
            case MAX_DYNAMIC_SHARED_SIZE_BYTES -> function.maxDynamicSharedBytes;
            case PREFERRED_SHARED_MEMORY_CARVEOUT -> function.preferredSharedCarveout;
        };
    }

    @Override
    protected void doFuncSetAttribute(Function function, FunctionAttribute attribute, int value) {
        if (attribute == FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES) {
            function.maxDynamicSharedBytes = value;
        } else {
            function.preferredSharedCarveout = value;
        }
    }

    @Override
    protected KernelSignature doBinarySignature(Function function, String kernelName) {
        return function.module.image().ptxSignature(kernelName); // a fatbin's, read from its PTX
    }

    // ---- memory

    @Override
    protected void doMap(Allocation allocation) {
        long total = properties.totalMemory();
        if (deviceUsedBytes.addAndGet(allocation.mappedBytes()) > total) {
            deviceUsedBytes.addAndGet(-allocation.mappedBytes());
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_OUT_OF_MEMORY,
                    String.format(
                            "CPU emulation: %d bytes do not fit in emulated device memory (%d of %d bytes in use)",
                            allocation.mappedBytes(), deviceUsedBytes.get(), total));
        }
        Arena arena = Arena.ofShared();
        try {
            // Host memory for the chunk's requested bytes: all of a shared chunk, only the asked-for
            // bytes of a large allocation's own, so a CI machine does not pay for granularity rounding.
            MemorySegment segment = arena.allocate(allocation.requestedBytes(), 16);
            backing.put(allocation.address(), new Backing(arena, segment, allocation.address()));
        } catch (OutOfMemoryError | RuntimeException e) {
            arena.close();
            deviceUsedBytes.addAndGet(-allocation.mappedBytes());
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_OUT_OF_MEMORY,
                    "CPU emulation: host memory for " + allocation.requestedBytes() + " bytes could not be allocated",
                    e);
        }
    }

    @Override
    protected void doUnmap(Allocation allocation) {
        Backing removed = backing.remove(allocation.address());
        removed.arena().close();
        deviceUsedBytes.addAndGet(-allocation.mappedBytes());
    }

    /** Emulated "pinned" memory is plain native memory: there is no DMA engine to pin it for. */
    @Override
    protected MemorySegment doAllocHost(long bytes, Arena arena) {
        return arena.allocate(bytes, 64);
    }

    // ---- copies, memsets: executed at once; synchronous ones first report a pending kernel fault

    @Override
    protected void doMemcpyHtoD(long dst, MemorySegment src, long bytes, Stream stream, boolean async) {
        reportFaultUnless(async);
        MemorySegment.copy(src, 0, operand(dst, bytes), 0, bytes);
    }

    @Override
    protected void doMemcpyDtoH(MemorySegment dst, long src, long bytes, Stream stream, boolean async) {
        reportFaultUnless(async);
        MemorySegment.copy(operand(src, bytes), 0, dst, 0, bytes);
    }

    @Override
    protected void doMemcpyDtoD(long dst, long src, long bytes, Stream stream, boolean async) {
        reportFaultUnless(async);
        MemorySegment.copy(operand(src, bytes), 0, operand(dst, bytes), 0, bytes);
    }

    @Override
    protected void doMemset(long dst, int value, int elementSize, long count, Stream stream, boolean async) {
        reportFaultUnless(async);
        MemorySegment target = operand(dst, count * elementSize);
        switch (elementSize) {
            case 1 -> target.fill((byte) value);
            case 2 -> {
                for (long i = 0; i < count; i++) {
                    target.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) value);
                }
            }
            default -> {
                for (long i = 0; i < count; i++) {
                    target.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, value);
                }
            }
        }
    }

    // ---- launch

    @Override
    protected void doLaunch(
            Function function, Dim3 grid, Dim3 block, int sharedMemBytes, Stream stream, KernelArgs args) {
        if (sharedMemBytes > function.maxDynamicSharedBytes) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "CPU emulation: launch of " + function.name + " asks for " + sharedMemBytes
                            + " bytes of dynamic shared memory, above its MAX_DYNAMIC_SHARED_SIZE_BYTES of "
                            + function.maxDynamicSharedBytes + " (raise it with funcSetAttribute)");
        }
        KernelTwin twin = twins.require(function.name);
        try {
            twin.run(grid, block, args, new ModuleMemory(this, function.module));
        } catch (VgpuException fault) {
            pendingKernelFault.compareAndSet(
                    null,
                    new VgpuException(fault.code(), "kernel " + function.name + " failed: " + fault.detail(), fault));
        }
    }

    // ---- streams, events, synchronization

    @Override
    protected Stream defaultStream() {
        return DEFAULT_STREAM;
    }

    @Override
    protected Stream doStreamCreate() {
        return new Stream();
    }

    @Override
    protected void doStreamSynchronize(Stream stream) {
        reportFaultUnless(false);
    }

    @Override
    protected void doStreamDestroy(Stream stream) {}

    @Override
    protected boolean doStreamQuery(Stream stream) {
        return everythingDone();
    }

    @Override
    protected Event doEventCreate() {
        return new Event();
    }

    @Override
    protected void doEventRecord(Event event, Stream stream) {
        event.recordedAtNanos = System.nanoTime();
    }

    /** Work runs when it is issued, so what the event marks is done already: there is nothing to wait for. */
    @Override
    protected void doStreamWaitEvent(Stream stream, Event event) {}

    @Override
    protected boolean doEventQuery(Event event) {
        return everythingDone();
    }

    /** A query's answer: work runs when it is issued, so all of it is done; a kernel's fault is reported as CUDA's queries do. */
    private boolean everythingDone() {
        reportFaultUnless(false);
        return true;
    }

    @Override
    protected void doEventSynchronize(Event event) {
        reportFaultUnless(false);
    }

    @Override
    protected float doEventElapsedTime(Event start, Event end) {
        long from = start.recordedAtNanos;
        long to = end.recordedAtNanos;
        if (from < 0 || to < 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_HANDLE, "eventElapsedTime needs two recorded events");
        }
        return (to - from) / 1e6f;
    }

    @Override
    protected void doEventDestroy(Event event) {}

    @Override
    protected void doCtxSynchronize() {
        reportFaultUnless(false);
    }

    @Override
    protected void doClose() {}

    /** A synchronizing call reports the first kernel fault since the last report, as CUDA does. */
    private void reportFaultUnless(boolean async) {
        if (!async) {
            VgpuException fault = pendingKernelFault.getAndSet(null);
            if (fault != null) {
                throw fault;
            }
        }
    }
}
