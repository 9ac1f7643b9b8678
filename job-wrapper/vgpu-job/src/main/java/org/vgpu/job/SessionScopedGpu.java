package org.vgpu.job;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.DirectDriverCalls;
import org.vgpu.runtime.api.DriverHandles;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;

/**
 * A job's vGPU as one session of the launcher's local worker uses it: every call goes to the job's vGPU (a
 * {@link org.vgpu.migration.MigratableGpu}, which the session does not own), and closing it frees what the session
 * made there (device and pinned host memory, modules, streams, events) but leaves the vGPU open. So the worker's rule
 * that a session's end frees its vGPU holds, and the job's vGPU, its migration agent and tracker link outlive the
 * process: the program's next process (a script's next binary) finds the vGPU empty and in the same window.
 */
final class SessionScopedGpu extends ForwardingVirtualGpu implements DirectDriverCalls {
    private final Set<Long> deviceMemory = ConcurrentHashMap.newKeySet();
    private final Map<Long, MemorySegment> hostMemory = new ConcurrentHashMap<>();
    private final Set<ModuleHandle> modules = ConcurrentHashMap.newKeySet();
    private final Set<StreamHandle> streams = ConcurrentHashMap.newKeySet();
    private final Set<EventHandle> events = ConcurrentHashMap.newKeySet();
    /** The session's direct callers, which the job's vGPU forgets when the session ends. */
    private final Set<DirectCallers> directCallers = ConcurrentHashMap.newKeySet();

    SessionScopedGpu(VirtualGpu jobVgpu) {
        super(jobVgpu);
    }

    @Override
    public long memAlloc(long bytes) {
        long address = delegate.memAlloc(bytes);
        deviceMemory.add(address);
        return address;
    }

    @Override
    public void memAllocAt(long address, long bytes) {
        delegate.memAllocAt(address, bytes);
        deviceMemory.add(address);
    }

    @Override
    public void memAllocAllAt(List<DeviceRegion> allocations) {
        delegate.memAllocAllAt(allocations);
        allocations.forEach(region -> deviceMemory.add(region.address()));
    }

    @Override
    public void memFree(long address) {
        delegate.memFree(address);
        deviceMemory.remove(address);
    }

    @Override
    public MemorySegment memAllocHost(long bytes) {
        MemorySegment memory = delegate.memAllocHost(bytes);
        hostMemory.put(memory.address(), memory);
        return memory;
    }

    @Override
    public void memFreeHost(MemorySegment memory) {
        delegate.memFreeHost(memory);
        hostMemory.remove(memory.address());
    }

    @Override
    public ModuleHandle moduleLoadData(byte[] image) {
        return kept(modules, delegate.moduleLoadData(image));
    }

    @Override
    public void moduleUnload(ModuleHandle module) {
        delegate.moduleUnload(module);
        modules.remove(module);
    }

    @Override
    public StreamHandle streamCreate() {
        return kept(streams, delegate.streamCreate());
    }

    @Override
    public void streamDestroy(StreamHandle stream) {
        delegate.streamDestroy(stream);
        streams.remove(stream);
    }

    @Override
    public EventHandle eventCreate() {
        return kept(events, delegate.eventCreate());
    }

    @Override
    public void eventDestroy(EventHandle event) {
        delegate.eventDestroy(event);
        events.remove(event);
    }

    // ---- direct driver calls: the job's vGPU's, since the session's handles are the job's vGPU's own

    @Override
    public <T> Optional<T> withDriverHandles(Function<DriverHandles, T> use) {
        return delegate instanceof DirectDriverCalls direct ? direct.withDriverHandles(use) : Optional.empty();
    }

    @Override
    public void addDirectCallers(DirectCallers callers) {
        if (delegate instanceof DirectDriverCalls direct) {
            direct.addDirectCallers(callers);
            directCallers.add(callers);
        }
    }

    @Override
    public void removeDirectCallers(DirectCallers callers) {
        if (delegate instanceof DirectDriverCalls direct && directCallers.remove(callers)) {
            direct.removeDirectCallers(callers);
        }
    }

    /** {@code made}, kept among what the session made. */
    private static <T> T kept(Set<T> made, T handle) {
        made.add(handle);
        return handle;
    }

    /**
     * Frees what the session made and left, the streams' work finished first; the job's vGPU stays open.
     *
     * @throws org.vgpu.runtime.api.VgpuException the first failure, after every free was tried
     */
    @Override
    public void close() {
        FailureCollector failures = new FailureCollector();
        List.copyOf(directCallers).forEach(this::removeDirectCallers);
        failures.attempt(delegate::ctxSynchronize);
        List.copyOf(events).forEach(event -> failures.attempt(() -> eventDestroy(event)));
        List.copyOf(streams).forEach(stream -> failures.attempt(() -> streamDestroy(stream)));
        List.copyOf(modules).forEach(module -> failures.attempt(() -> moduleUnload(module)));
        List.copyOf(deviceMemory).forEach(address -> failures.attempt(() -> memFree(address)));
        List.copyOf(hostMemory.values()).forEach(memory -> failures.attempt(() -> memFreeHost(memory)));
        failures.rethrow();
    }
}
