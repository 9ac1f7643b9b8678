package org.vgpu.migration;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;

/**
 * The pinned host buffers of a migratable vGPU and the backends that allocated them. A buffer stays the allocating
 * backend's after the vGPU moves (its pages are page-locked by that backend's driver or worker), so it is freed there;
 * a former backend is kept open only while it has buffers, and closed with its last.
 */
final class PinnedHostOwners {
    /** Which backend allocated each buffer, by address. Changed under {@link #lock}. */
    private final Map<Long, VirtualGpu> owners = new ConcurrentHashMap<>();
    /** Former backends kept only for the buffers they allocated. Changed under {@link #lock}. */
    private final Set<VirtualGpu> retired = ConcurrentHashMap.newKeySet();

    private final Object lock = new Object();

    /** A buffer of {@code bytes} from {@code backend}, the vGPU's backend now (the caller holds the vGPU's gate). */
    MemorySegment allocate(VirtualGpu backend, long bytes) {
        synchronized (lock) {
            MemorySegment segment = backend.memAllocHost(bytes);
            owners.put(segment.address(), backend);
            return segment;
        }
    }

    /** Frees {@code hostMemory} on the backend that allocated it, closing that backend if it was a former one's last. */
    void free(MemorySegment hostMemory) {
        synchronized (lock) {
            VirtualGpu owner = hostMemory == null ? null : owners.get(hostMemory.address());
            if (owner == null) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        "host memory was not allocated by memAllocHost of this vGPU");
            }
            owner.memFreeHost(hostMemory);
            owners.remove(hostMemory.address());
            if (retired.contains(owner) && !owners.containsValue(owner)) {
                retired.remove(owner);
                owner.close();
            }
        }
    }

    /**
     * After a move, {@code source}'s device memory ({@code regions}) is freed now, and it is closed at once unless the
     * app still holds buffers it allocated, in which case it is closed with the last one. The slow part (freeing,
     * closing: a round trip to a remote worker) happens outside the lock, so the app's buffer calls never wait for it.
     */
    void release(VirtualGpu source, List<DeviceRegion> regions) {
        FailureCollector failures = new FailureCollector();
        if (owners.containsValue(source)) {
            for (DeviceRegion region : regions) {
                failures.attempt(() -> source.memFree(region.address()));
            }
        }
        boolean kept;
        synchronized (lock) {
            // The app may have freed its last buffer of the source meanwhile; then it is closed here.
            kept = owners.containsValue(source);
            if (kept) {
                retired.add(source);
            }
        }
        if (!kept) {
            failures.attempt(source::close);
        }
        failures.rethrow();
    }

    /** Closes {@code backend} (the vGPU's own now) and every former backend kept for buffers; failures to {@code failures}. */
    void closeAll(VirtualGpu backend, FailureCollector failures) {
        synchronized (lock) {
            failures.attempt(backend::close);
            for (VirtualGpu former : retired) {
                failures.attempt(former::close);
            }
            retired.clear();
            owners.clear();
        }
    }
}
