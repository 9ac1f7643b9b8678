package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;

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
 * {@link #expect expected} only when that cannot change what the caller finds in its memory, and only while that
 * memory stays allocated ({@link ChunkedCopies} decides: no other copy into the same memory in flight, landing or
 * held, and a caller that waits in the copy or promised to keep the memory). A chunk whose header names a place outside
 * its copy is the worker's protocol error, and nothing of it is read there. Once the connection is lost the stripes
 * read nothing more into callers' memory, and no app thread hears of the loss before the chunks being read into it
 * were given up ({@link #stopExpecting}, {@link #awaitQuiet}).
 *
 * <p>Threads: app threads expect and forget copies; the stripes' event loops reserve and fill the rooms.
 */
final class StraightDestinations implements StripedStreams.ChunkLander {
    private static final Logger LOG = LoggerFactory.getLogger(StraightDestinations.class);
    /** How long a caller waits for a stripe still reading into its memory: its connection was lost. */
    private static final long QUIET_PATIENCE_MILLIS = 10_000;

    private final ConcurrentHashMap<Integer, Destination> expected = new ConcurrentHashMap<>();
    /** Rooms being filled, of all copies; guarded by {@code this}. */
    private int filling;
    /** Chunks read straight into their destination so far: for tests and the benchmark. */
    private final AtomicLong straightChunks = new AtomicLong();

    private volatile boolean stopped;

    /** The memory of one expected copy, the copy, and how many of its chunks are being read into it right now. */
    private static final class Destination {
        final MemorySegment memory;
        final PendingCall<?> copy;
        /** Guarded by the {@link StraightDestinations} that has it. */
        int filling;

        Destination(MemorySegment memory, PendingCall<?> copy) {
            this.memory = memory;
            this.copy = copy;
        }
    }

    /**
     * Has the chunks of request {@code requestId}'s copy read straight into {@code memory} (shared native memory that
     * stays allocated while the copy is in flight) until the copy is done or {@link #forget forgotten}. Forgets the
     * copies done meanwhile. Batch lock held.
     */
    void expect(int requestId, PendingCall<?> copy, MemorySegment memory) {
        if (!memory.isNative()) {
            throw new IllegalArgumentException("a copy read straight in needs native memory");
        }
        synchronized (this) {
            expected.values().removeIf(done -> done.copy.isDone() && done.filling == 0);
        }
        if (!stopped) {
            expected.put(requestId, new Destination(memory, copy));
        }
    }

    /**
     * Stops reading request {@code requestId}'s chunks straight in, once no stripe reads into its memory any more: the
     * caller may free that memory after this. A stripe still reading means the connection was lost and its stripes
     * are closing; after {@value #QUIET_PATIENCE_MILLIS} ms this gives up and says so.
     */
    void forget(int requestId) {
        Destination gone = expected.remove(requestId);
        if (gone != null) {
            await(() -> gone.filling, "request " + requestId);
        }
    }

    /** The connection is lost: no chunk is read straight in from now on. Event loop, before the loss is told. */
    void stopExpecting() {
        stopped = true;
        expected.clear();
    }

    /** Returns once no stripe reads into callers' memory (at most {@value #QUIET_PATIENCE_MILLIS} ms). */
    void awaitQuiet() {
        await(() -> filling, "callers' memory");
    }

    /** Waits while {@code rooms}, read under this object's lock, counts rooms being filled. */
    private synchronized void await(IntSupplier rooms, String what) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(QUIET_PATIENCE_MILLIS);
        while (rooms.getAsInt() > 0) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                LOG.error("a stripe still reads into the memory of {} after {} ms", what, QUIET_PATIENCE_MILLIS);
                return;
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** How many chunks were read straight into their destination. */
    long straightChunks() {
        return straightChunks.get();
    }

    @Override
    public boolean lands(ChunkLabel label, int length) {
        Destination destination = expected.get(label.requestId());
        return length > 0 && destination != null && !destination.copy.isDone();
    }

    @Override
    public StripedStreams.Room reserve(int stripe, ChunkLabel label, int length, Runnable roomAgain) {
        Destination destination = expected.get(label.requestId());
        if (destination == null) {
            throw new IllegalArgumentException("request " + label.requestId() + " is not read straight in");
        }
        long size = destination.memory.byteSize();
        if (label.offset() > size - length) {
            throw Frames.violation("stripe " + stripe + " carries " + length + " bytes at offset " + label.offset()
                    + " of request " + label.requestId() + ", whose copy is " + size + " bytes");
        }
        MemorySegment memory = destination.memory.asSlice(label.offset(), length);
        synchronized (this) {
            filling++;
            destination.filling++;
        }
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

    /** A room of {@code destination} is filled or given back: {@link #forget} and {@link #awaitQuiet} may wait for it. */
    private synchronized void done(Destination destination) {
        filling--;
        destination.filling--;
        notifyAll();
    }
}
