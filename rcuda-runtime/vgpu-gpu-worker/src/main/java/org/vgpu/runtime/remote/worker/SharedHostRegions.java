package org.vgpu.runtime.remote.worker;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.transport.HostRegionFile;
import org.vgpu.runtime.remote.transport.OwnerOnlyMapping;
import org.vgpu.runtime.remote.transport.SameHostBulk;

/**
 * The page-locked host memory a worker shares with the programs of its host: a local worker with the processes of
 * its program ({@code cuMemHostAlloc} in vgpu's {@code libcuda.so.1}), a worker over TCP with a Java program on its
 * host ({@code memAllocHost} of a remote vGPU whose client offered shared memory). Each region is a file of {@link
 * OwnerOnlyMapping}'s rules ({@link HostRegionFile}) that both map, so a copy between it and a vGPU names the region,
 * an offset and a length, and no byte crosses the socket. Each region is registered with the node's backend ({@link
 * GpuBackend#hostRegister}) as it is made: it is on this host whatever GPU its vGPUs are on, so a native vGPU copies it
 * by DMA, and one that comes home after a migration does too.
 *
 * <p>Shared by the worker's sessions (a program's vGPUs each have one, and a copy may use a region another made; a
 * worker over TCP serves one session at a time, whose end frees its regions before the next is opened);
 * bounded in bytes; a region is freed by its maker's free or end, and unmapped once no copy uses it. Every region id,
 * offset and length a client sends is checked here: a bad one is refused with {@code CUDA_ERROR_INVALID_VALUE}.
 */
final class SharedHostRegions implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SharedHostRegions.class);

    private final Optional<Path> directory;
    private final String whyNone;
    private final long boundBytes;
    private final GpuBackend backend;
    /** Guarded by this. */
    private final Map<Integer, Region> regions = new HashMap<>();
    /** Guarded by this. */
    private long heldBytes;
    /** Guarded by this. */
    private int nextId = 1;

    private SharedHostRegions(Optional<Path> directory, String whyNone, long boundBytes, GpuBackend backend) {
        this.directory = directory;
        this.whyNone = whyNone;
        this.boundBytes = boundBytes;
        this.backend = backend;
    }

    /** Regions in {@code directory}, at most {@code boundBytes} of them at once, registered with {@code backend}. */
    static SharedHostRegions in(Path directory, long boundBytes, GpuBackend backend) {
        return new SharedHostRegions(Optional.of(directory), "", boundBytes, backend);
    }

    /**
     * A worker's: in {@link SameHostBulk#directory()}, bounded to half its filesystem's size (the rest stays for
     * what else the node keeps there, and the filesystem's size bounds all workers' regions together); none where
     * shared memory is off.
     */
    static SharedHostRegions forThisHost(GpuBackend backend) {
        Optional<Path> directory = SameHostBulk.directory();
        if (directory.isEmpty()) {
            return none("-D" + SameHostBulk.PROPERTY + "=off on the worker");
        }
        try {
            long bound = Files.getFileStore(directory.get()).getTotalSpace() / 2;
            return in(directory.get(), bound, backend);
        } catch (IOException e) {
            return none("no shared host memory in " + directory.get() + ": " + VgpuFailure.describe(e));
        }
    }

    /** No regions: each request for one is refused with CUDA_ERROR_NOT_SUPPORTED, saying {@code why}. */
    static SharedHostRegions none(String why) {
        return new SharedHostRegions(Optional.empty(), why, 0, null);
    }

    /** What a client needs to map a new region: its id, its file's path and the nonce in its header. */
    record Grant(int id, Path file, long nonce) {}

    /**
     * A new region of at least {@code bytes} (whole pages), made by {@code maker}.
     *
     * @throws VgpuException CUDA_ERROR_NOT_SUPPORTED where there are none, CUDA_ERROR_INVALID_VALUE for a size of 0 or
     *     less, CUDA_ERROR_OUT_OF_MEMORY past the bound or when the file cannot be made
     */
    Grant create(long bytes, Object maker) {
        if (directory.isEmpty()) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_NOT_SUPPORTED, "shared host memory is not served: " + whyNone);
        }
        if (bytes <= 0 || bytes > HostRegionFile.MAX_BYTES) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE, "a shared host region of " + bytes + " bytes cannot be made");
        }
        long pages = HostRegionFile.pagesFor(bytes);
        synchronized (this) {
            if (pages > boundBytes - heldBytes) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_OUT_OF_MEMORY,
                        "a shared host region of " + bytes + " bytes would pass the launcher's bound of " + boundBytes
                                + " bytes of page-locked memory shared with the program (" + heldBytes
                                + " held now)");
            }
            heldBytes += pages;
        }
        Region region;
        try {
            region = map(pages);
        } catch (IOException | RuntimeException e) {
            release(pages);
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_OUT_OF_MEMORY,
                    "no shared host region of " + bytes + " bytes in " + directory.get() + ": "
                            + VgpuFailure.describe(e),
                    e);
        }
        synchronized (this) {
            int id = nextId++;
            regions.put(id, region.madeBy(maker));
            return new Grant(id, region.file, region.nonce);
        }
    }

    private synchronized void release(long pages) {
        heldBytes -= pages;
    }

    private Region map(long pages) throws IOException {
        Arena arena = Arena.ofShared();
        try {
            long nonce = OwnerOnlyMapping.nonce();
            OwnerOnlyMapping created = HostRegionFile.create(directory.orElseThrow(), pages, nonce, arena);
            MemorySegment data = HostRegionFile.bytesOf(created.mapping());
            boolean registered = false;
            try {
                registered = backend.hostRegister(data);
            } catch (RuntimeException e) {
                // still shared, copied at pageable speed: a program's pinned allocation need not fail for it
                LOG.warn("a shared host region is not page-locked: {}", VgpuFailure.describe(e));
            }
            return new Region(created.file(), nonce, data, arena, registered);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Runs {@code copy} on {@code bytes} of region {@code id} from {@code offset}; the region stays mapped until it
     * returns, even when it is freed meanwhile.
     *
     * @throws VgpuException CUDA_ERROR_INVALID_VALUE for an id that names no region, or a range outside it
     */
    void use(int id, long offset, long bytes, Consumer<MemorySegment> copy) {
        Region region;
        synchronized (this) {
            region = regions.get(id);
            if (region == null) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE, "no shared host region " + id + " (never made, or freed)");
            }
            long size = region.data.byteSize();
            if (offset < 0 || bytes < 0 || offset > size || bytes > size - offset) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        "bytes " + offset + " to " + offset + "+" + bytes + " are outside shared host region " + id
                                + " of " + size + " bytes");
            }
            region.users++;
        }
        try {
            copy.accept(region.data.asSlice(offset, bytes));
        } catch (InternalError e) {
            // the JVM's word for a fault on mapped memory: the file under the region was shrunk behind its back
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "shared host region " + id + " cannot be read or written any more (its file was shrunk): "
                            + e.getMessage());
        } finally {
            done(region);
        }
    }

    private void done(Region region) {
        boolean unmap;
        synchronized (this) {
            region.users--;
            unmap = region.freed && region.users == 0;
        }
        if (unmap) {
            unmap(region);
        }
    }

    /**
     * Frees region {@code id}.
     *
     * @throws VgpuException CUDA_ERROR_INVALID_VALUE for an id that names no region
     */
    void free(int id) {
        Region region;
        synchronized (this) {
            region = regions.remove(id);
            if (region == null) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        "no shared host region " + id + " to free (never made, or freed)");
            }
        }
        retire(region);
    }

    /** Frees what {@code maker} made and did not free: its session ended. */
    void freeAllOf(Object maker) {
        List<Region> retiring = new ArrayList<>();
        synchronized (this) {
            regions.values().removeIf(region -> region.maker == maker && retiring.add(region));
        }
        retiring.forEach(this::retire);
    }

    private void retire(Region region) {
        boolean unmap;
        synchronized (this) {
            region.freed = true;
            heldBytes -= region.data.byteSize();
            unmap = region.users == 0;
        }
        if (unmap) {
            unmap(region);
        }
    }

    private void unmap(Region region) {
        try {
            if (region.registered) {
                backend.hostUnregister(region.data);
            }
        } catch (RuntimeException e) {
            LOG.warn("cannot unregister a shared host region: {}", VgpuFailure.describe(e));
        } finally {
            region.arena.close();
            try {
                Files.deleteIfExists(region.file); // the client unlinks it as it maps it; one that never did
            } catch (IOException e) {
                LOG.warn("cannot remove the shared host region {}: {}", region.file, VgpuFailure.describe(e));
            }
        }
    }

    /** The most bytes the regions may hold at once; 0 where there are none. */
    long boundBytes() {
        return boundBytes;
    }

    /** How many bytes the regions hold now. */
    synchronized long heldBytes() {
        return heldBytes;
    }

    /** Frees every region: the worker stops. */
    @Override
    public void close() {
        List<Region> retiring;
        synchronized (this) {
            retiring = new ArrayList<>(regions.values());
            regions.clear();
        }
        retiring.forEach(this::retire);
    }

    /** One region: its file, its bytes (after the header page) and who uses it; counts guarded by the registry. */
    private static final class Region {
        final Path file;
        final long nonce;
        final MemorySegment data;
        final Arena arena;
        final boolean registered;
        Object maker;
        int users;
        boolean freed;

        Region(Path file, long nonce, MemorySegment data, Arena arena, boolean registered) {
            this.file = file;
            this.nonce = nonce;
            this.data = data;
            this.arena = arena;
            this.registered = registered;
        }

        Region madeBy(Object owner) {
            this.maker = owner;
            return this;
        }
    }
}
