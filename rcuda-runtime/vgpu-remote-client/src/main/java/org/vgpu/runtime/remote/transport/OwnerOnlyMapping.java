package org.vgpu.runtime.remote.transport;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Set;

/**
 * Memory a process shares with another of its user on this host through a file: created under a fresh random name
 * in a directory (never an existing file or a link planted there), readable and writable by this user alone from the
 * moment it exists, and mapped here; the other process opens it by its path, checks it, and one of the two unlinks
 * it. The rules every shared region of vgpu's follows ({@link SharedMemoryRing}, a launcher's shared host regions).
 *
 * @param file    the file, until unlinked
 * @param mapping the whole file, mapped read-write in the arena it was created with
 */
public record OwnerOnlyMapping(Path file, MemorySegment mapping) {
    /** The file mode every shared region has. */
    public static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");

    private static final SecureRandom RANDOM = new SecureRandom();

    /**
     * Creates {@code prefix} and 32 random hex digits in {@code directory}, {@code bytes} long, mapped in
     * {@code arena}; the file is removed again when the mapping fails.
     *
     * @throws IOException the directory is missing or not writable, or the mapping failed
     */
    public static OwnerOnlyMapping create(Path directory, String prefix, long bytes, Arena arena) throws IOException {
        byte[] name = new byte[16];
        RANDOM.nextBytes(name);
        // CREATE_NEW fails on an existing name or a link planted there; the mode is set as the file is created
        Path file = Files.createFile(
                directory.resolve(prefix + HexFormat.of().formatHex(name)),
                PosixFilePermissions.asFileAttribute(OWNER_ONLY));
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(new byte[1]), bytes - 1);
            return new OwnerOnlyMapping(file, channel.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena));
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(file);
            throw e;
        }
    }

    /**
     * The other process's side: maps the whole of {@code file} in {@code arena}, which must be a regular file (not a
     * link) of mode 600, of {@code minBytes} to {@code maxBytes} bytes. Its contents are the caller's to check.
     *
     * @throws IOException why it cannot be used, in words for a log line
     */
    public static OwnerOnlyMapping open(Path file, long minBytes, long maxBytes, Arena arena) throws IOException {
        PosixFileAttributes attributes =
                Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (!attributes.isRegularFile()) {
            throw new IOException(file + " is not a regular file");
        }
        if (!attributes.permissions().equals(OWNER_ONLY)) {
            throw new IOException(
                    file + " has mode " + PosixFilePermissions.toString(attributes.permissions()) + ", not rw-------");
        }
        try (FileChannel channel =
                FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
            long size = channel.size();
            if (size < minBytes || size > maxBytes) {
                throw new IOException(file + " holds " + size + " bytes, not "
                        + (minBytes == maxBytes ? minBytes : minBytes + " to " + maxBytes));
            }
            return new OwnerOnlyMapping(file, channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena));
        }
    }

    /** A random number to write into a region, which the process that opens it checks. */
    public static long nonce() {
        return RANDOM.nextLong();
    }
}
