package org.vgpu.runtime.remote.transport;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The file behind a region of page-locked host memory that a worker shares with a program on its host
 * (HOST_REGION_CREATE): a header page holding {@code "VGHR"} and the worker's nonce, then the region's bytes in whole
 * pages. The worker creates it by {@link OwnerOnlyMapping}'s rules and answers with its path and nonce; the program
 * (vgpu's {@code libcuda.so.1}, whose {@code served_host_memory.c} reads the same layout, or a Java program's remote
 * vGPU) maps it, checks it and unlinks it, and from then on a copy between the region and a vGPU names the region, an
 * offset and a length, so that no byte crosses the session's socket.
 */
public final class HostRegionFile {
    /** The header page before a region's bytes. */
    public static final long HEADER_BYTES = 4096;
    /** {@code "VGHR"} in the host's byte order, at offset 0 of the header. */
    public static final int MAGIC = 0x56474852;
    /** Where the worker's nonce lies in the header. */
    public static final long NONCE_OFFSET = 8;

    private static final long PAGE = 4096;
    /** The largest region asked for: its whole pages and the header still fit a file's size. */
    public static final long MAX_BYTES = Long.MAX_VALUE - HEADER_BYTES - PAGE;

    private HostRegionFile() {}

    /** The bytes a region asked to hold {@code bytes} holds: whole pages. {@code bytes} in [1, {@link #MAX_BYTES}]. */
    public static long pagesFor(long bytes) {
        return Math.ceilDiv(bytes, PAGE) * PAGE;
    }

    /**
     * The worker's side: a fresh file in {@code directory} of the header and {@code pages} bytes (whole pages),
     * mapped in {@code arena} with the header written.
     *
     * @param nonce the random number the program checks ({@link OwnerOnlyMapping#nonce})
     * @return the file and the whole mapping, header included
     * @throws IOException the directory is missing or not writable, or the mapping failed
     */
    public static OwnerOnlyMapping create(Path directory, long pages, long nonce, Arena arena) throws IOException {
        OwnerOnlyMapping created = OwnerOnlyMapping.create(directory, "vgpu-host-", HEADER_BYTES + pages, arena);
        MemorySegment mapping = created.mapping();
        mapping.set(ValueLayout.JAVA_LONG_UNALIGNED, NONCE_OFFSET, nonce);
        mapping.set(ValueLayout.JAVA_INT_UNALIGNED, 0, MAGIC);
        return created;
    }

    /** The region's bytes in {@code mapping} (the whole file's): all after the header page. */
    public static MemorySegment bytesOf(MemorySegment mapping) {
        return mapping.asSlice(HEADER_BYTES);
    }

    /**
     * The program's side: maps the region of {@code bytes} (as asked for) the worker created at {@code file} in
     * {@code arena}, checks it holds the worker's {@code nonce}, and unlinks it whether it could be used or not.
     *
     * @return the region's bytes, whole pages
     * @throws IOException why it cannot be used, in words for a log line: not a regular file of mode 600, not of
     *     the region's size, another nonce
     */
    public static MemorySegment open(Path file, long nonce, long bytes, Arena arena) throws IOException {
        try {
            long size = HEADER_BYTES + pagesFor(bytes);
            MemorySegment mapping =
                    OwnerOnlyMapping.open(file, size, size, arena).mapping();
            if (mapping.get(ValueLayout.JAVA_INT_UNALIGNED, 0) != MAGIC
                    || mapping.get(ValueLayout.JAVA_LONG_UNALIGNED, NONCE_OFFSET) != nonce) {
                throw new IOException(file + " holds another nonce than the worker announced");
            }
            return bytesOf(mapping);
        } finally {
            // both mappings stay; the name goes at once, so nothing is left behind whoever ends first
            Files.deleteIfExists(file);
        }
    }
}
