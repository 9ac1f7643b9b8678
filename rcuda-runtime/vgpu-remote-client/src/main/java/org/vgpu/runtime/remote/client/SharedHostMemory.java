package org.vgpu.runtime.remote.client;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.HostRegionGrant;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;
import org.vgpu.runtime.remote.transport.HostRegionFile;

/**
 * A remote vGPU's page-locked host memory when its worker is on this host: each allocation is a region of the
 * worker's shared host regions (HOST_REGION_CREATE), a file both processes map and the worker registers with its
 * driver, so that a copy between it and the device names the region, an offset and a length
 * (MEMCPY_HTOD_FROM_REGION, MEMCPY_DTOH_TO_REGION): no byte is copied here or crosses the connection, and the worker's
 * device copies the region by DMA. The same requests, and the same worker side, as vgpu's {@code libcuda.so.1} uses
 * for a C program's page-locked memory.
 *
 * <p>Where there are none (a worker on another host, shared memory off on either side, the worker's bound reached, a
 * file that cannot be mapped here) the allocation is this process's own memory, whose copies travel as always; the
 * first reason is logged once, and a worker that serves none is not asked again.
 */
final class SharedHostMemory {
    private static final Logger LOG = LoggerFactory.getLogger(SharedHostMemory.class);

    /** A region this vGPU mapped: the worker's id, and its bytes here. */
    private record Region(int id, MemorySegment bytes) {}

    /** Where a copy's host bytes lie in a region. */
    record Place(int regionId, long offset) {}

    private final WorkerConnection connection;
    /** Why no region is asked for; empty while they are. */
    private volatile String none;

    private final AtomicBoolean fallbackSaid = new AtomicBoolean();
    /** The regions mapped here, by their bytes' address. */
    private final ConcurrentSkipListMap<Long, Region> regions = new ConcurrentSkipListMap<>();

    /**
     * @param none why the session has no shared host memory, empty when its client offered the worker shared memory
     *     (it is on this host)
     */
    SharedHostMemory(WorkerConnection connection, String none) {
        this.connection = connection;
        this.none = none;
    }

    /**
     * {@code bytes} of page-locked memory shared with the worker, mapped in {@code arena} (closing it unmaps them);
     * empty where none can be had, said in the log once.
     *
     * @throws VgpuException what the session's connection failed with (its worker lost, say)
     */
    Optional<MemorySegment> allocate(long bytes, Arena arena) {
        if (!none.isEmpty() || bytes > HostRegionFile.MAX_BYTES) {
            return Optional.empty();
        }
        HostRegionGrant grant;
        try {
            grant = connection.call(
                    (encoder, requestId) -> encoder.hostRegionCreate(requestId, bytes), ReplyDecoder::hostRegion);
        } catch (VgpuException e) {
            if (e.code() == ErrorCode.CUDA_ERROR_NOT_SUPPORTED) {
                none = e.detail();
                fellBack(e.detail());
                return Optional.empty();
            }
            if (e.code() == ErrorCode.CUDA_ERROR_OUT_OF_MEMORY) {
                fellBack(e.detail());
                return Optional.empty();
            }
            throw e;
        }
        MemorySegment mapped;
        try {
            mapped = HostRegionFile.open(Path.of(grant.path()), grant.nonce(), bytes, arena);
        } catch (IOException | RuntimeException e) {
            // a worker of another user, say: its files are not this process's to open
            none = "its region " + grant.path() + " cannot be mapped here: " + VgpuFailure.describe(e);
            free(grant.id());
            fellBack(none);
            return Optional.empty();
        }
        MemorySegment memory = mapped.asSlice(0, bytes);
        regions.put(memory.address(), new Region(grant.id(), mapped));
        return Optional.of(memory);
    }

    private void fellBack(String why) {
        if (fallbackSaid.compareAndSet(false, true)) {
            LOG.info(
                    "page-locked host memory of the vGPU on {} is this process's own, copied through the session: {}",
                    connection.endpoint().describe(),
                    why);
        }
    }

    /** The region {@code bytes} of {@code host} lie in, and where; empty for memory that is no region of this vGPU. */
    Optional<Place> find(MemorySegment host, long bytes) {
        if (regions.isEmpty() || !host.isNative()) {
            return Optional.empty();
        }
        long address = host.address();
        Map.Entry<Long, Region> below = regions.floorEntry(address);
        if (below == null) {
            return Optional.empty();
        }
        long offset = address - below.getKey();
        long size = below.getValue().bytes().byteSize();
        return offset <= size && bytes <= size - offset
                ? Optional.of(new Place(below.getValue().id(), offset))
                : Optional.empty();
    }

    /**
     * Forgets the region at {@code address}, if memory there is one, before its mapping goes; the worker frees its
     * side too unless {@code sessionEnding} (the worker frees every region of a session that ends).
     */
    void forget(long address, boolean sessionEnding) {
        Region region = regions.remove(address);
        if (region == null || sessionEnding) {
            return;
        }
        try {
            free(region.id());
        } catch (VgpuException e) {
            // a worker that is gone freed the session's regions as it lost it: the memory is freed all the same
            if (e.code() != ErrorCode.VGPU_WORKER_LOST) {
                throw e;
            }
        }
    }

    private void free(int id) {
        connection.call((encoder, requestId) -> encoder.hostRegionFree(requestId, id), ReplyDecoder::empty);
    }

    /** How many regions are mapped here now. */
    int regionCount() {
        return regions.size();
    }

    /** What the vGPU's page-locked memory is now, in a few words, for logs and benchmark headers. */
    String describe() {
        int count = regions.size();
        if (count > 0) {
            long bytes = regions.values().stream()
                    .mapToLong(region -> region.bytes().byteSize())
                    .sum();
            return count + " allocation(s), " + (bytes >> 20) + " MiB, shared with the worker, which has them"
                    + " page-locked: their copies carry no bytes";
        }
        return "this process's own, copied through the session" + (none.isEmpty() ? "" : " (" + none + ")");
    }
}
