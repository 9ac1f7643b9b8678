package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.transport.ChunkLabel;
import org.vgpu.runtime.remote.transport.StripedStreams;

/**
 * The caller's memory of the device-to-host copies whose chunks the stripes read straight into it: a stripe that reads
 * a chunk's header finds the copy by the request id the header carries, and has the kernel read the chunk's bytes from
 * the socket into the caller's memory at the header's offset, instead of into Netty's buffers that a copier then
 * copies from after the chunk's frame. When the frame comes, the chunk it names is already where it goes, and
 * {@link ChunkLanding} sees that and copies nothing.
 *
 * <p>The chunks of a copy are read on all the stripes at once, in no order, and before their frames, so a copy is
 * {@link #expect expected} only when that cannot change what the caller finds in its memory: {@link ChunkedCopies}
 * expects a synchronous copy alone, with no other device-to-host copy in flight, landing or held; the caller's thread
 * waits in the copy meanwhile, so its memory stays allocated. A chunk whose header names a place outside its copy is
 * the worker's protocol error, and nothing of it is read there.
 *
 * <p>Threads: app threads expect and forget copies; the stripes' event loops reserve and fill the rooms.
 */
final class StraightDestinations implements StripedStreams.ChunkLander {
    private static final Logger LOG = LoggerFactory.getLogger(StraightDestinations.class);
    /** How long {@link #forget} waits for a stripe still reading into a copy's memory: its connection was lost. */
    private static final long FORGET_PATIENCE_MILLIS = 10_000;

    private final ConcurrentHashMap<Integer, Destination> expected = new ConcurrentHashMap<>();
    /** Chunks read straight into their destination so far: for tests and logs. */
    private final AtomicLong straightChunks = new AtomicLong();

    /** The memory of one expected copy, and how many of its chunks are being read into it right now. */
    private record Destination(MemorySegment memory, AtomicInteger filling) {}

    /**
     * Has the chunks of request {@code requestId}'s copy read straight into {@code memory} (shared native memory, as
     * long as the copy), until {@link #forget}.
     */
    void expect(int requestId, MemorySegment memory) {
        if (!memory.isNative()) {
            throw new IllegalArgumentException("a copy read straight in needs native memory");
        }
        expected.put(requestId, new Destination(memory, new AtomicInteger()));
    }

    /**
     * Stops reading request {@code requestId}'s chunks straight in, once no stripe reads into its memory any more: the
     * caller may free that memory after this. A stripe still reading means the connection was lost and its stripes
     * are closing; after {@value #FORGET_PATIENCE_MILLIS} ms this gives up and says so.
     */
    void forget(int requestId) {
        Destination gone = expected.remove(requestId);
        if (gone == null || gone.filling().get() == 0) {
            return;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FORGET_PATIENCE_MILLIS);
        synchronized (gone) {
            while (gone.filling().get() > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    LOG.error(
                            "a stripe still reads into the memory of request {} after {} ms",
                            requestId,
                            FORGET_PATIENCE_MILLIS);
                    return;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(gone, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** How many chunks were read straight into their destination. */
    long straightChunks() {
        return straightChunks.get();
    }

    @Override
    public boolean lands(ChunkLabel label, int length) {
        return length > 0 && expected.containsKey(label.requestId());
    }

    @Override
    public StripedStreams.Room reserve(int stripe, ChunkLabel label, int length, Runnable roomAgain) {
        Destination destination = expected.get(label.requestId());
        if (destination == null) {
            throw new IllegalArgumentException("request " + label.requestId() + " is not read straight in");
        }
        long size = destination.memory().byteSize();
        if (label.offset() > size - length) {
            throw Frames.violation("stripe " + stripe + " carries " + length + " bytes at offset " + label.offset()
                    + " of request " + label.requestId() + ", whose copy is " + size + " bytes");
        }
        MemorySegment memory = destination.memory().asSlice(label.offset(), length);
        destination.filling().incrementAndGet();
        return new StripedStreams.Room() {
            @Override
            public MemorySegment memory() {
                return memory;
            }

            @Override
            public ByteBuf filled() {
                straightChunks.incrementAndGet();
                done(destination);
                return Unpooled.wrappedBuffer(memory.asByteBuffer());
            }

            @Override
            public void abandon() {
                done(destination);
            }
        };
    }

    /** A room of {@code destination} is filled or given back: a {@link #forget} may wait for that. */
    private static void done(Destination destination) {
        if (destination.filling().decrementAndGet() == 0) {
            synchronized (destination) {
                destination.notifyAll();
            }
        }
    }
}
