package org.vgpu.runtime.remote.transport;

import java.lang.foreign.MemorySegment;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.Frames;

/**
 * The way a session's bulk bytes (the chunks of large copies, both ways, and so a migration's mem-sync)
 * travel between a client and its worker, while the calls that name them keep travelling as frames on the
 * session's connection. A chunk's frame (MEMCPY_HTOD, MEMCPY_HTOD_SCATTER, DATA) is written as always; what
 * follows its header, its <em>trailer</em>, is whatever the path makes of the bytes: the bytes themselves
 * ({@link InBandFrames}, TCP, TLS or a Unix socket), or a reference to where they already lie (a slot of memory
 * both processes map, {@link SharedMemoryRing}; a registered memory region an RDMA write filled, one day). Frames
 * that carry a reference set {@link #frameFlags()}.
 *
 * <p>The contract, for every implementation:
 * <ul>
 *   <li><b>Memory.</b> {@link #send} reads the caller's bytes before it returns and keeps no reference to them,
 *       unless the returned trailer wraps them (in-band, zero-copy): then the caller keeps them valid until the
 *       trailer is released, as Netty does once the socket took it. {@link #receive} returns a buffer that is
 *       the receiver's until it releases it; the region behind it (a slot) may be reused by the sender only
 *       after that release, never before.</li>
 *   <li><b>Ordering.</b> A chunk's bytes are in place before its frame is written, and are read by the receiver
 *       only after its frame was read: the frames keep every ordering rule of the calls (asynchronous errors
 *       reported at the next synchronizing call, {@code FLAG_FAILURE_KEPT} on an asynchronous copy's last DATA
 *       chunk, a synchronize after a device-to-host copy answered by its last chunk).</li>
 *   <li><b>Back-pressure.</b> {@link #send} waits while the path holds as many unreleased chunks as it has room
 *       for; memory stays bounded by the path's own bound ({@link #boundBytes()}) on top of the connection's.
 *       A receiver that keeps a chunk until something else happens (the owner thread of confined memory) copies
 *       it and releases the buffer: an unreleased chunk holds its region, and the sender takes regions in
 *       order.</li>
 *   <li><b>Failure.</b> A trailer that names no region the path has, or more bytes than that region holds, or a
 *       region not filled, is a {@code VGPU_PROTOCOL_ERROR} ({@link #receive}), after which the session closes;
 *       nothing outside the path's own memory is ever read or written. {@link #close} makes a waiting
 *       {@link #send} give up with an {@link IllegalStateException}: the session is ending.</li>
 * </ul>
 * Thread-safety: one sending thread and one receiving thread at a time per side; releases from any thread.
 */
public interface BulkBytePath extends AutoCloseable {
    /** Flags a frame whose trailer this path made must carry: 0 when the trailer is the bytes themselves. */
    int frameFlags();

    /**
     * The chunk {@code frame} carries in {@code trailer} (the rest of its body), through {@link #receive}.
     *
     * @throws org.vgpu.runtime.api.VgpuException VGPU_PROTOCOL_ERROR when the frame says its chunk is in a shared
     *     slot and this path has none, or the reverse
     */
    default ByteBuf chunkOf(Frame frame, ByteBuf trailer) {
        if (frame.inSlot() != ((frameFlags() & Frames.FLAG_IN_SLOT) != 0)) {
            throw Frames.violation(frame.opcode() + (frame.inSlot() ? " names a shared slot" : " carries its bytes")
                    + " but the session's bulk bytes go " + describe());
        }
        return receive(trailer);
    }

    /** The largest chunk one {@link #send} takes: senders cut their chunks no larger. */
    int maxChunkBytes();

    /** How many bytes the trailer of a chunk of {@code length} bytes takes on the connection. */
    int trailerBytes(int length);

    /**
     * Makes {@code length} bytes of {@code src} from {@code offset} travel as the chunk {@code label} names: returns
     * the frame's trailer, waiting for room first.
     *
     * @throws IllegalStateException the path was closed while waiting
     */
    ByteBuf send(MemorySegment src, long offset, int length, ChunkLabel label);

    /**
     * As {@link #send}, for a caller that keeps the {@code length} bytes of {@code src} from {@code offset} valid and
     * unchanged until {@code sent} runs (from any thread): a path that writes them to a socket later may then send
     * them as they are instead of copying them first. The default copies, as {@link #send} does, and runs
     * {@code sent} at once.
     */
    default ByteBuf sendBorrowed(MemorySegment src, long offset, int length, ChunkLabel label, Runnable sent) {
        try {
            return send(src, offset, length, label);
        } finally {
            sent.run();
        }
    }

    /**
     * The chunk a frame with {@link #frameFlags()} set carries, from its {@code trailer}, which stays the
     * caller's. The buffer returned is the receiver's to release; releasing it frees the region.
     *
     * @throws org.vgpu.runtime.api.VgpuException VGPU_PROTOCOL_ERROR for a trailer that names no filled region
     */
    ByteBuf receive(ByteBuf trailer);

    /** The most bytes the path holds on top of the connection's own buffers (0 in-band). */
    long boundBytes();

    /** The path in a few words, for logs and benchmark headers: "in-band (TCP frames)", "same-host shared memory ...". */
    String describe();

    /** Stops senders that wait for room; memory that received buffers still show stays valid until they are released. */
    @Override
    void close();
}
