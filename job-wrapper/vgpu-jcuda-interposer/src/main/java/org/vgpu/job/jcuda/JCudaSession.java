package org.vgpu.job.jcuda;

import java.lang.foreign.MemorySegment;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.IntConsumer;

import jcuda.NativePointerObject;
import jcuda.Pointer;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * What the JCuda shims of one JVM share: the job's vGPUs (CUDA device k is vGPU k), each thread's current device, and
 * the tables from the ids the shims put into JCuda's handle objects to the runtime's handles, each with its device.
 * The runtime's handles and the window addresses survive a migration, so a program's handles do too.
 *
 * <p>One context per device: {@code cuCtxCreate} and {@code cuDevicePrimaryCtxRetain} give the device's one context,
 * {@code cuCtxDestroy} (and {@code cudaDeviceReset}) frees what the program made on that device through the shims.
 */
final class JCudaSession {
    /** A handle the shims gave out: the device it belongs to and the runtime's handle. */
    record Handle<T>(int device, T handle) {}

    private static volatile JCudaSession installed;

    private final List<? extends VirtualGpu> devices;
    private final ThreadLocal<Integer> current = new ThreadLocal<>();
    /** The device last made current by any thread: a thread that made none current works there. */
    private volatile int lastCurrent;

    private final AtomicLong nextId = new AtomicLong(0x1000);
    private final Map<Long, Handle<ModuleHandle>> modules = new ConcurrentHashMap<>();
    private final Map<Long, Handle<FunctionHandle>> functions = new ConcurrentHashMap<>();
    private final Map<Long, Handle<StreamHandle>> streams = new ConcurrentHashMap<>();
    private final Map<Long, Handle<EventHandle>> events = new ConcurrentHashMap<>();
    /** Each function's parameter sizes, asked once (a launch decodes its parameters with them). */
    private final Map<Handle<FunctionHandle>, KernelSignature> signatures = new ConcurrentHashMap<>();
    /** Device allocations by address, for cuCtxDestroy. */
    private final Map<Long, Integer> allocations = new ConcurrentHashMap<>();
    /** Page-locked host memory the shims handed out, by the buffer they put into the program's Pointer. */
    private final IdentityHashMap<Buffer, HostAllocation> hostMemory = new IdentityHashMap<>();
    /** The host functions queued on streams, which work queued after them waits for. */
    private final StreamHostFunctions hostFunctions = new StreamHostFunctions();

    /** Page-locked host memory of {@code device}, with the flags the program allocated it with. */
    private record HostAllocation(int device, MemorySegment memory, int flags) {}

    JCudaSession(List<? extends VirtualGpu> devices) {
        this.devices = List.copyOf(devices);
    }

    /** Makes {@code devices} the ones every shim call of this JVM works on (the premain calls it before main). */
    static void install(List<? extends VirtualGpu> devices) {
        installed = new JCudaSession(devices);
    }

    static JCudaSession get() {
        JCudaSession session = installed;
        if (session == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_INITIALIZED, "vgpu opened no vGPUs in this JVM for its JCuda calls");
        }
        return session;
    }

    int deviceCount() {
        return devices.size();
    }

    /** Whether every vGPU is the CPU emulation, where no GPU code is needed (NVRTC only declares the kernels). */
    boolean allEmulated() {
        return devices.stream().allMatch(gpu -> gpu.deviceProperties().emulated());
    }

    VirtualGpu device(int ordinal) {
        if (ordinal < 0 || ordinal >= devices.size()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_DEVICE,
                    "device " + ordinal + " does not exist: this job has " + devices.size() + " vGPUs (devices 0 to "
                            + (devices.size() - 1) + ")");
        }
        return devices.get(ordinal);
    }

    int currentDevice() {
        Integer device = current.get();
        return device == null ? lastCurrent : device;
    }

    VirtualGpu currentGpu() {
        return device(currentDevice());
    }

    void makeCurrent(int device) {
        device(device);
        current.set(device);
        lastCurrent = device;
    }

    /** The device whose window holds {@code address}. */
    int deviceOf(long address) {
        for (int k = 0; k < devices.size(); k++) {
            if (devices.get(k).window().contains(address, 1)) {
                return k;
            }
        }
        throw new VgpuException(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                String.format("0x%x is no device pointer of this job's vGPUs", address));
    }

    /**
     * The vGPU whose window holds {@code address}, for work on its default stream (a synchronous copy or memset, a
     * free), once the device's host functions have run.
     */
    VirtualGpu gpuOf(long address) {
        int device = deviceOf(address);
        hostFunctions.awaitBefore(device, StreamHandle.DEFAULT);
        return devices.get(device);
    }

    // ---- handles

    /** Puts a new id for {@code handle} of {@code device} into the program's object. */
    <T> void give(Map<Long, Handle<T>> table, NativePointerObject object, int device, T handle) {
        long id = nextId.getAndIncrement();
        table.put(id, new Handle<>(device, handle));
        JCudaObjects.setNativePointer(object, id);
    }

    <T> Handle<T> find(Map<Long, Handle<T>> table, NativePointerObject object, String what) {
        Handle<T> handle = table.get(JCudaObjects.nativePointer(object));
        if (handle == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_HANDLE, what + " is not one vgpu gave out, or is gone");
        }
        return handle;
    }

    <T> Handle<T> take(Map<Long, Handle<T>> table, NativePointerObject object, String what) {
        Handle<T> handle = find(table, object, what);
        table.remove(JCudaObjects.nativePointer(object));
        JCudaObjects.setNativePointer(object, 0);
        return handle;
    }

    KernelSignature signature(Handle<FunctionHandle> function) {
        return signatures.computeIfAbsent(
                function, found -> device(found.device()).functionSignature(found.handle()));
    }

    Map<Long, Handle<ModuleHandle>> modules() {
        return modules;
    }

    Map<Long, Handle<FunctionHandle>> functions() {
        return functions;
    }

    Map<Long, Handle<StreamHandle>> streams() {
        return streams;
    }

    /** The stream a program's CUstream or cudaStream_t names: null or 0 is the current device's default stream. */
    Handle<StreamHandle> stream(NativePointerObject stream) {
        if (JCudaObjects.nativePointer(stream) == 0) {
            return new Handle<>(currentDevice(), StreamHandle.DEFAULT);
        }
        return find(streams, stream, "stream");
    }

    // ---- streams and events, as the driver's and the runtime's calls of the same name do them

    /** The stream, for work queued on it now: once the host functions that work comes after have run. */
    Handle<StreamHandle> queueOn(NativePointerObject stream) {
        Handle<StreamHandle> queue = stream(stream);
        hostFunctions.awaitBefore(queue.device(), queue.handle());
        return queue;
    }

    /** Waits for the host functions that work queued now on {@code stream} of {@code device} comes after. */
    void awaitHostFunctions(int device, StreamHandle stream) {
        hostFunctions.awaitBefore(device, stream);
    }

    /** Runs {@code work} on the vGPU of {@code stream} with the runtime's handle of it, in stream order. */
    void onStream(NativePointerObject stream, BiConsumer<VirtualGpu, StreamHandle> work) {
        Handle<StreamHandle> queue = queueOn(stream);
        work.accept(device(queue.device()), queue.handle());
    }

    /**
     * Queues {@code function} on {@code stream} ({@link StreamHostFunctions}): it gets 0 or the code of the error of the
     * stream's earlier work; with {@code skipOnError} it is not called after one.
     */
    void addHostFunction(NativePointerObject stream, JCudaApi api, boolean skipOnError, IntConsumer function) {
        Handle<StreamHandle> queue = stream(stream);
        hostFunctions.add(queue.device(), device(queue.device()), queue.handle(), api, skipOnError, function);
    }

    /** As cuStreamQuery: done when its work and its host functions are. */
    boolean streamQuery(NativePointerObject stream) {
        Handle<StreamHandle> queue = stream(stream);
        return !hostFunctions.pendingOn(queue.device(), queue.handle())
                && device(queue.device()).streamQuery(queue.handle());
    }

    /** As cuCtxSynchronize on the current device: its work and its host functions done. */
    void synchronize() {
        int device = currentDevice();
        hostFunctions.awaitDevice(device);
        device(device).ctxSynchronize();
    }

    void streamCreate(NativePointerObject stream) {
        int device = currentDevice();
        give(streams, stream, device, device(device).streamCreate());
    }

    void streamSynchronize(NativePointerObject stream) {
        onStream(stream, VirtualGpu::streamSynchronize);
    }

    void streamWaitEvent(NativePointerObject stream, NativePointerObject event, String call) {
        Handle<StreamHandle> queue = queueOn(stream);
        Handle<EventHandle> awaited = find(events, event, "event");
        if (awaited.device() != queue.device()) {
            throw JCudaApi.unsupported(call + " across two devices");
        }
        device(queue.device()).streamWaitEvent(queue.handle(), awaited.handle());
    }

    void streamDestroy(NativePointerObject stream) {
        queueOn(stream);
        Handle<StreamHandle> queue = take(streams, stream, "stream");
        device(queue.device()).streamDestroy(queue.handle());
    }

    void eventCreate(NativePointerObject event) {
        int device = currentDevice();
        give(events, event, device, device(device).eventCreate());
    }

    void eventRecord(NativePointerObject event, NativePointerObject stream) {
        Handle<EventHandle> recorded = find(events, event, "event");
        device(recorded.device()).eventRecord(recorded.handle(), queueOn(stream).handle());
    }

    /** Whether the work before {@code event}'s last record is done. */
    boolean eventQuery(NativePointerObject event) {
        Handle<EventHandle> found = find(events, event, "event");
        return device(found.device()).eventQuery(found.handle());
    }

    void eventSynchronize(NativePointerObject event) {
        Handle<EventHandle> found = find(events, event, "event");
        device(found.device()).eventSynchronize(found.handle());
    }

    void eventElapsedTime(float[] milliseconds, NativePointerObject start, NativePointerObject end) {
        Handle<EventHandle> from = find(events, start, "event");
        Handle<EventHandle> to = find(events, end, "event");
        milliseconds[0] = device(from.device()).eventElapsedTime(from.handle(), to.handle());
    }

    void eventDestroy(NativePointerObject event) {
        Handle<EventHandle> gone = take(events, event, "event");
        device(gone.device()).eventDestroy(gone.handle());
    }

    // ---- memory

    long allocate(long bytes) {
        int device = currentDevice();
        long address = device(device).memAlloc(bytes);
        allocations.put(address, device);
        return address;
    }

    void free(long address) {
        free(gpuOf(address), address);
    }

    /**
     * Frees {@code address} on {@code gpu}, out of the table first: once the vGPU has freed it, another thread's
     * allocation may get the address, and its entry must not be the one taken out.
     */
    private void free(VirtualGpu gpu, long address) {
        Integer device = allocations.remove(address);
        try {
            gpu.memFree(address);
        } catch (RuntimeException e) {
            if (device != null) {
                allocations.put(address, device);
            }
            throw e;
        }
    }

    /** Page-locked memory into {@code pointer}, keeping the {@code flags} it was asked with (checked by the caller). */
    void allocateHost(Pointer pointer, long bytes, int flags) {
        int device = currentDevice();
        MemorySegment memory = device(device).memAllocHost(bytes);
        ByteBuffer buffer = memory.asByteBuffer();
        synchronized (hostMemory) {
            hostMemory.put(buffer, new HostAllocation(device, memory, flags));
        }
        JCudaObjects.pointTo(pointer, buffer);
    }

    /** The flags {@code pointer}'s page-locked memory was allocated with (0 for cuMemAllocHost, cudaMallocHost). */
    int hostFlags(Pointer pointer) {
        synchronized (hostMemory) {
            return hostAllocation(hostMemory.get(JCudaObjects.buffer(pointer))).flags();
        }
    }

    void freeHost(Pointer pointer) {
        HostAllocation allocation;
        synchronized (hostMemory) {
            allocation = hostAllocation(hostMemory.remove(JCudaObjects.buffer(pointer)));
        }
        device(allocation.device()).memFreeHost(allocation.memory());
        JCudaObjects.pointTo(pointer, null);
    }

    private static HostAllocation hostAllocation(HostAllocation found) {
        if (found == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "host pointer was not allocated by cuMemAllocHost, cuMemHostAlloc, cudaMallocHost or cudaHostAlloc");
        }
        return found;
    }

    /** What cuCtxDestroy and cudaDeviceReset do: waits for the device, frees what the program made there. */
    void reset(int device) {
        hostFunctions.awaitDevice(device);
        VirtualGpu gpu = device(device);
        gpu.ctxSynchronize();
        for (Map.Entry<Long, Integer> allocation : new ArrayList<>(allocations.entrySet())) {
            if (allocation.getValue() == device) {
                free(gpu, allocation.getKey());
            }
        }
        streams.values().removeIf(stream -> {
            boolean here = stream.device() == device;
            if (here) {
                gpu.streamDestroy(stream.handle());
            }
            return here;
        });
        events.values().removeIf(event -> {
            boolean here = event.device() == device;
            if (here) {
                gpu.eventDestroy(event.handle());
            }
            return here;
        });
        functions.values().removeIf(function -> function.device() == device);
        modules.values().removeIf(module -> {
            boolean here = module.device() == device;
            if (here) {
                gpu.moduleUnload(module.handle());
            }
            return here;
        });
    }
}
