package org.vgpu.runtime.api;

import static org.vgpu.runtime.api.surface.Call.Kind.ASYNC;
import static org.vgpu.runtime.api.surface.Call.Kind.SYNC;
import static org.vgpu.runtime.api.surface.Call.Kind.SYNCHRONIZING;

import java.lang.foreign.MemorySegment;
import java.util.List;

import org.vgpu.runtime.api.surface.GenerateForwarder;
import org.vgpu.runtime.api.surface.RemoteCall;
import org.vgpu.runtime.api.surface.ReplayedSetting;
import org.vgpu.runtime.api.surface.Synchronizing;

/**
 * One virtual GPU of a job: the app-facing API of vgpu.
 *
 * <p>Shaped like the CUDA driver API as JCuda exposes it ({@code cuMemAlloc}, {@code cuMemcpyHtoD},
 * {@code cuLaunchKernel}, ...) so that JCuda programs map onto it call for call. Differences, and why:
 * <ul>
 *   <li>Device pointers are plain {@code long} addresses inside this vGPU's {@link #window()}: every
 *       allocation lands at a fixed address there, on every backend, which is what lets a migration
 *       keep pointers valid, including pointers stored in device memory.</li>
 *   <li>Modules, functions, streams and events are runtime-owned ids, not driver objects, so they
 *       survive a change of backend.</li>
 *   <li>Host memory is a {@link MemorySegment}: heap segments (wrapping Java arrays) for synchronous
 *       copies, native segments (for example from {@link #memAllocHost}) for asynchronous ones.</li>
 *   <li>Copies and memsets are checked against the live allocations of this vGPU: a freed, foreign
 *       or out-of-range pointer is refused with CUDA_ERROR_INVALID_VALUE before the device sees it.</li>
 *   <li>A launch is checked against the kernel's declared parameters.</li>
 * </ul>
 * Errors of asynchronous calls may surface at the next synchronizing call, as in CUDA.
 * Methods may be called from any thread.
 *
 * <p>The build generates {@link ForwardingVirtualGpu} from this interface, and the migration
 * agent's gated forwarder; {@link Synchronizing} marks the calls that report such errors.
 * {@link RemoteCall} marks the calls a remote worker serves one to one (the operands travel, the
 * worker makes the same call, the result comes back) with their opcode and kind, and whether they
 * destroy their handle's object or create one: both ends of those are generated too (see {@code RemoteCalls}, which lists the remote protocol's other requests).
 * {@link ReplayedSetting} marks the calls that set a value of the context, or of a module's function,
 * that a migration sets again on its target: the agent's gated forwarder records them.
 * Adding such a call takes this interface, its checks in {@code AbstractVirtualGpu} and its meaning
 * in {@code NativeGpu} and {@code EmulatedGpu}.
 */
@GenerateForwarder("ForwardingVirtualGpu")
public interface VirtualGpu extends AutoCloseable {

    /** The vGPU's index k within its job; it fixes the address window. */
    default int vgpuIndex() {
        return window().vgpuIndex();
    }

    /** The virtual-address window every allocation of this vGPU lives in. */
    VaWindow window();

    /** "native", "emulated" or "remote". */
    String backendName();

    DeviceProperties deviceProperties();

    /**
     * As {@code cuCtxGetDevice} (and the runtime API's {@code cudaGetDevice}): the device this vGPU
     * is to the program, which is its index k in the job ({@link #vgpuIndex()}), not the ordinal of
     * whatever GPU, worker or emulation serves it now: CUDA device k is vGPU k, before and after a
     * migration, on every backend.
     */
    int ctxGetDevice();

    /**
     * As {@code cuDeviceGetAttribute}: one figure of the device behind this vGPU, as its driver
     * reports it (a remote vGPU's worker's GPU; the emulation's fixed, documented figures). CUDA's
     * attribute numbers map to {@link DeviceAttribute} with {@link DeviceAttribute#fromCuda}, which
     * refuses those vgpu does not answer with CUDA_ERROR_INVALID_VALUE.
     */
    @RemoteCall(opcode = 0x0021, kind = SYNC)
    int deviceGetAttribute(DeviceAttribute attribute);

    /** As {@code cuMemGetInfo}: the device's free and total memory. */
    MemoryInfo memGetInfo();

    // ---- modules and functions

    /** As {@code cuModuleLoadData}: a PTX text (NUL-terminated or not) or a cubin image. */
    ModuleHandle moduleLoadData(byte[] image);

    @RemoteCall(opcode = 0x0031, kind = SYNC, destroys = true)
    void moduleUnload(ModuleHandle module);

    /** As {@code cuModuleGetFunction}; CUDA_ERROR_NOT_FOUND when the module has no such kernel. */
    FunctionHandle moduleGetFunction(ModuleHandle module, String kernelName);

    /**
     * As {@code cuFuncGetAttribute}: one figure of a kernel as compiled for the device behind this
     * vGPU (the emulation's fixed figures: see {@code EmulatedGpu}), or the value set by
     * {@link #funcSetAttribute}. CUDA's numbers map with {@link FunctionAttribute#fromCuda}.
     */
    @RemoteCall(opcode = 0x0033, kind = SYNC)
    int funcGetAttribute(FunctionAttribute attribute, FunctionHandle function);

    /**
     * As {@code cuFuncSetAttribute}, for the {@link FunctionAttribute#settable} attributes: a kernel
     * that launches with more than 48 KiB of dynamic shared memory raises its
     * MAX_DYNAMIC_SHARED_SIZE_BYTES first (at most the device's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN).
     * The value holds for every handle of that kernel, and across a migration.
     */
    @ReplayedSetting
    @RemoteCall(opcode = 0x0034, kind = SYNC)
    void funcSetAttribute(FunctionHandle function, FunctionAttribute attribute, int value);

    /**
     * As {@code cuModuleGetGlobal}: the address and size of module variable {@code name} (a
     * {@code __device__} or {@code __constant__} variable); CUDA_ERROR_NOT_FOUND when the module
     * defines none. The address is the runtime's, in the top of {@link #window()}, the same each time
     * and kept by a migration, which carries the variable's contents too: copies and memsets there
     * reach the variable. Passed to a kernel as a pointer it would fault: kernels reach module
     * variables by name.
     */
    @RemoteCall(opcode = 0x0035, kind = SYNC)
    DeviceRegion moduleGetGlobal(ModuleHandle module, String name);

    /**
     * vgpu's extension of {@link #moduleGetGlobal}: the variable's address is {@code address}, which
     * must be free in the window's globals area. A migration replays the program's lookups with it,
     * so that the addresses the program holds stay valid.
     */
    DeviceRegion moduleGetGlobalAt(ModuleHandle module, String name, long address);

    /** The parameter sizes of a function, as its module declares them. */
    KernelSignature functionSignature(FunctionHandle function);

    /**
     * As {@code cuModuleEnumerateFunctions} with {@code cuFuncGetName}: the names of the module's
     * kernels (its entry functions), each of which {@link #moduleGetFunction} finds, sorted (the
     * driver promises no order). Libraries that take a module's kernels without naming them (cuFFT)
     * get them through this.
     */
    @RemoteCall(opcode = 0x0036, kind = SYNC)
    KernelNames moduleKernelNames(ModuleHandle module);

    // ---- device memory

    /**
     * As {@code cuMemAlloc}: {@code bytes} of device memory at an address inside {@link #window()},
     * 256-byte aligned at least. Allocations of at most 1 MiB share 2 MiB chunks of physical memory,
     * as CUDA packs small allocations, so a small one costs its size rounded up to 256 bytes; a
     * larger one takes chunks of its own (its size rounded up to 2 MiB). Addresses follow from the
     * sequence of allocations and frees alone, the same on every backend.
     */
    long memAlloc(long bytes);

    /**
     * vgpu's extension of {@code cuMemAlloc}: {@code bytes} at exactly {@code address}, which must be
     * inside {@link #window()} and free, and aligned as {@link #memAlloc} would have placed it: to 2 MiB
     * for more than 1 MiB, to 256 bytes for a small allocation, which then shares the chunk that
     * holds its address. A remote worker serves the client's chunks with it, so that every device
     * pointer keeps its value.
     */
    void memAllocAt(long address, long bytes);

    /**
     * vgpu's extension: {@link #memAllocAt} for each of {@code allocations}, all or none, mapping
     * the chunks they need at once (a remote vGPU in one request). A migration replays a state's
     * allocations with it: its cost follows the chunks, not the allocations, and the target's
     * layout is then the source's, so later allocations get the addresses they would have got there.
     */
    void memAllocAllAt(List<DeviceRegion> allocations);

    /** As {@code cuMemFree}: {@code address} must be the start of a live allocation of this vGPU. */
    void memFree(long address);

    /**
     * As {@code cuMemGetAddressRange}: the start and size (as allocated) of the live allocation
     * holding {@code address}; CUDA_ERROR_NOT_FOUND when none does. Answered from the runtime's map
     * of the window, the same on every backend and after a migration.
     */
    DeviceRegion memGetAddressRange(long address);

    /**
     * As {@code cuPointerGetAttribute} for a device address of this vGPU, from the same map as
     * {@link #memGetAddressRange}; an address no live allocation holds is CUDA_ERROR_INVALID_VALUE.
     */
    long pointerGetAttribute(PointerAttribute attribute, long address);

    /** Page-locked host memory for fast and asynchronous copies; free with {@link #memFreeHost}. */
    MemorySegment memAllocHost(long bytes);

    void memFreeHost(MemorySegment hostMemory);

    // ---- copies and memsets

    @Synchronizing
    void memcpyHtoD(long dstDevice, MemorySegment srcHost, long byteCount);

    @Synchronizing
    void memcpyDtoH(MemorySegment dstHost, long srcDevice, long byteCount);

    @Synchronizing
    void memcpyDtoD(long dstDevice, long srcDevice, long byteCount);

    /** {@code srcHost} must be native memory that stays valid until the stream reaches the copy. */
    void memcpyHtoDAsync(long dstDevice, MemorySegment srcHost, long byteCount, StreamHandle stream);

    /** {@code dstHost} must be native memory that stays valid until the stream reaches the copy. */
    void memcpyDtoHAsync(MemorySegment dstHost, long srcDevice, long byteCount, StreamHandle stream);

    void memcpyDtoDAsync(long dstDevice, long srcDevice, long byteCount, StreamHandle stream);

    /**
     * vgpu's extension: asynchronous device-to-host copies of many regions, packed back to back into
     * {@code dstHost} in their order, as {@link #memcpyDtoHAsync} of each would. On a remote vGPU it
     * is one request answered by one stream of data, so a thousand small regions cost one round
     * trip, not a thousand (a migration reads its live regions so). Each region must lie in a live
     * allocation, or in small allocations that follow one another without a gap inside one shared
     * 2 MiB chunk; {@code dstHost} must be native memory that stays valid until the stream reaches the copy.
     */
    void memcpyDtoHGatherAsync(MemorySegment dstHost, List<DeviceRegion> srcRegions, StreamHandle stream);

    /**
     * vgpu's extension, the reverse of {@link #memcpyDtoHGatherAsync}: asynchronous host-to-device
     * copies that unpack {@code srcHost}, read back to back, into many regions in their order, as
     * {@link #memcpyHtoDAsync} of each would. A migration writes its live regions to the target so;
     * a local GPU may do it with one kernel launch for many small regions instead of one driver
     * copy each. Each region must lie where {@link #memcpyDtoHGatherAsync} requires; {@code srcHost}
     * must be native memory that stays valid until the stream reaches the copy.
     */
    void memcpyHtoDScatterAsync(List<DeviceRegion> dstRegions, MemorySegment srcHost, StreamHandle stream);

    /**
     * vgpu's extension: checks, copying nothing, that each of {@code regions} lies in a live
     * allocation or module variable, as a copy through them is checked (adjacent small allocations
     * of one chunk count as one, as {@link #memcpyDtoHGatherAsync} says). For one who serves a single
     * copy in many calls (a worker streams a copy from the device in chunks): the whole request is
     * refused before any work or memory is committed to it, not after the chunks of an impossible
     * size were planned.
     *
     * @param what names the operand in the error, e.g. "memcpyDtoH source"
     * @throws VgpuException CUDA_ERROR_INVALID_VALUE for the first region outside
     */
    void checkDeviceRegions(List<DeviceRegion> regions, String what);

    /**
     * As {@code cuMemcpy2D}: {@code height} rows of {@code widthBytes} each, from rows {@code
     * src.pitch()} bytes apart to rows {@code dst.pitch()} bytes apart; host to device, device to
     * host or device to device (two host sides are refused: that is no device copy). Each pitch must
     * be at least {@code widthBytes}, and all rows of a side must lie in one live allocation or host
     * buffer; the bytes between rows are left as they are.
     */
    @Synchronizing
    void memcpy2D(PitchedMemory dst, PitchedMemory src, long widthBytes, long height);

    /** As {@code cuMemsetD8}: {@code count} bytes. */
    @Synchronizing
    void memsetD8(long dstDevice, byte value, long count);

    /** As {@code cuMemsetD32}: {@code count} 32-bit words; {@code dstDevice} 4-byte aligned. */
    @Synchronizing
    void memsetD32(long dstDevice, int value, long count);

    /** As {@code cuMemsetD16}: {@code count} 16-bit words; {@code dstDevice} 2-byte aligned. */
    @Synchronizing
    void memsetD16(long dstDevice, short value, long count);

    /**
     * As {@code cuMemsetD2D32}: {@code height} rows of {@code width} 32-bit words each, the rows
     * {@code pitch} bytes apart from {@code dstDevice} (4-byte aligned, as is the pitch of more than
     * one row, which holds a row); the bytes between rows are left as they are. All rows must lie in
     * one live allocation or module variable.
     */
    @Synchronizing
    @RemoteCall(opcode = 0x0056, kind = SYNCHRONIZING)
    void memsetD2D32(long dstDevice, long pitch, int value, long width, long height);

    /** As {@code cuMemsetD2D32Async}: {@link #memsetD2D32}, queued on {@code stream}. */
    @RemoteCall(opcode = 0x0057, kind = ASYNC)
    void memsetD2D32Async(long dstDevice, long pitch, int value, long width, long height, StreamHandle stream);

    void memsetD8Async(long dstDevice, byte value, long count, StreamHandle stream);

    void memsetD16Async(long dstDevice, short value, long count, StreamHandle stream);

    void memsetD32Async(long dstDevice, int value, long count, StreamHandle stream);

    // ---- launch

    /** As {@code cuLaunchKernel}; asynchronous with respect to the host. */
    void launchKernel(
            FunctionHandle function, Dim3 grid, Dim3 block, int sharedMemBytes, StreamHandle stream, KernelArgs args);

    // ---- streams, events, synchronization

    @RemoteCall(opcode = 0x0070, kind = ASYNC, creates = true)
    StreamHandle streamCreate();

    @Synchronizing
    void streamSynchronize(StreamHandle stream);

    @RemoteCall(opcode = 0x0072, kind = ASYNC, destroys = true)
    void streamDestroy(StreamHandle stream);

    /**
     * As {@code cuStreamWaitEvent} with flags 0: work queued on {@code stream} after this call
     * starts only once the work {@code event} was last recorded after is done; the host does not
     * wait. An event not yet recorded is no wait at all, as in CUDA.
     */
    @RemoteCall(opcode = 0x0073, kind = ASYNC)
    void streamWaitEvent(StreamHandle stream, EventHandle event);

    /**
     * As {@code cuStreamQuery}: true when all work queued on {@code stream} is done (CUDA_SUCCESS),
     * its results readable (those of copies to the host included); false while some is not
     * (CUDA_ERROR_NOT_READY, which is an answer, not a failure). Never waits. As in CUDA, it reports
     * the failure of earlier asynchronous work.
     */
    @Synchronizing
    @RemoteCall(opcode = 0x0074, kind = SYNCHRONIZING)
    boolean streamQuery(StreamHandle stream);

    @RemoteCall(opcode = 0x0080, kind = ASYNC, creates = true)
    EventHandle eventCreate();

    @RemoteCall(opcode = 0x0081, kind = ASYNC)
    void eventRecord(EventHandle event, StreamHandle stream);

    /**
     * As {@code cuEventQuery}: true when the work {@code event} was last recorded after is done, or
     * when it was never recorded (CUDA_SUCCESS); false while that work is not (CUDA_ERROR_NOT_READY,
     * which is an answer, not a failure). Never waits. As in CUDA, it reports the failure of earlier
     * asynchronous work.
     */
    @Synchronizing
    @RemoteCall(opcode = 0x0085, kind = SYNCHRONIZING)
    boolean eventQuery(EventHandle event);

    @Synchronizing
    @RemoteCall(opcode = 0x0082, kind = SYNCHRONIZING)
    void eventSynchronize(EventHandle event);

    /** As {@code cuEventElapsedTime}: milliseconds between two recorded, completed events. */
    @RemoteCall(opcode = 0x0083, kind = SYNC)
    float eventElapsedTime(EventHandle start, EventHandle end);

    @RemoteCall(opcode = 0x0084, kind = ASYNC, destroys = true)
    void eventDestroy(EventHandle event);

    /** As {@code cuCtxSynchronize}: waits for all work of this vGPU. */
    @Synchronizing
    @RemoteCall(opcode = 0x0090, kind = SYNCHRONIZING)
    void ctxSynchronize();

    /**
     * As {@code cuCtxSetLimit}: sets one of the context's {@link ContextLimit}s, the stack of each GPU
     * thread or the size of the device-side printf FIFO or malloc heap, before the kernels that need
     * it launch; the driver may round the value up ({@link #ctxGetLimit} tells what it took), or
     * refuse one it cannot give. A local GPU's limits are its primary context's, shared by every vGPU
     * of the process on that GPU, as they are with CUDA. A migration sets the last value of each limit
     * on the target again; CUDA's numbers map with {@link ContextLimit#fromCuda}.
     */
    @ReplayedSetting
    @RemoteCall(opcode = 0x0091, kind = SYNC)
    void ctxSetLimit(ContextLimit limit, long value);

    /** As {@code cuCtxGetLimit}: the limit's value, as the driver took it; CUDA's default until set. */
    @RemoteCall(opcode = 0x0092, kind = SYNC)
    long ctxGetLimit(ContextLimit limit);

    /** Frees everything this vGPU holds: allocations, modules, streams, events, its window. */
    @Override
    void close();
}
