package org.vgpu.runtime.remote.transport;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.Future;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;

/**
 * Bulk bytes striped over extra TCP connections of the session (its <em>stripes</em>), each served by its own event
 * loop thread, so a large copy is carried by several connections at once rather than one. Chunks are numbered in the
 * order they are sent; chunk {@code n} travels on stripe {@code n mod stripes}, as
 * <pre>
 *   offset  size    field
 *   0       4       uint32 sequence number (the low 32 bits of the chunk's number)
 *   4       4       uint32 length, at most {@value #MAX_CHUNK_BYTES}
 *   8       4       uint32 the id of the request whose frame names the chunk ({@link ChunkLabel})
 *   12      8       uint64 where the chunk's bytes start in that request's bytes
 *   20      length  the chunk's bytes
 * </pre>
 * and its frame on the session's connection carries {@link Frames#FLAG_IN_SLOT} and the trailer {@code uint32
 * sequence number, uint32 length}. The receiver takes chunks in the order their frames name them and waits for a
 * chunk whose frame came before its bytes.
 *
 * <p><b>Copies.</b> {@link #sendBorrowed} writes the caller's memory to the stripe as it is (no copy in the JVM: the
 * kernel copies it into the socket), {@link #send} copies it into a direct buffer first, for callers that reuse their
 * memory at once. A received chunk is the bytes the socket read, in Netty's buffers, without being merged: the
 * receiver copies them once, into their destination (the caller's memory, or the worker's pinned staging slot). A
 * receiver that knows where a chunk goes from its header's label, before the frame naming it (which travels on
 * another connection) arrives, may instead give the path a {@link ChunkLander}, which sets room aside for each chunk
 * it lands as its header arrives (the worker: a page-locked slot for any chunk bound for the device; the client: the
 * caller's memory itself, for the requests it registered): a stripe whose channel reads through {@link ReadTargets}
 * (and has no TLS) then reads the chunk's bytes from its socket straight into that room, after reading the header
 * alone, so the kernel's copy is their only one; another copies a whole chunk in as its last byte arrives. Either way
 * the stripes do it in parallel, on their own event loops, rather than the receiver's one thread after its frame; a
 * stripe whose lander has no room for it stops reading until it has.
 *
 * <p><b>Memory.</b> A stripe stops reading its socket (TCP's window then stops the sender) while it holds
 * {@value #PAUSE_BYTES} bytes or more that no frame has taken yet, or waits for its lander's room; a sender waits while its stripe's outbound buffer
 * is above its high water mark. So the path holds at most, per stripe, that many bytes and a chunk received, plus
 * the channel's write buffer: {@link #boundBytes()}.
 *
 * <p><b>Failure.</b> A chunk header out of sequence or over the bound, a frame naming a chunk out of order or with
 * another length than its bytes, a chunk that does not arrive within the patience given, and a chunk awaited on (or
 * to be sent on) a stripe that closed are a {@code VGPU_PROTOCOL_ERROR}: the path fails, closes its stripes and reports the
 * failure once to {@code onFailure}, which ends the session; waiting senders and receivers give up at once.
 */
public final class StripedStreams implements BulkBytePath {
    /** The largest chunk a stripe carries: a frame's largest body, the bound the in-band chunks have. */
    public static final int MAX_CHUNK_BYTES = Frames.MAX_BODY_BYTES;
    /** The bytes a stripe holds, arrived but not yet taken, before it stops reading its socket. */
    static final int PAUSE_BYTES = 8 << 20;
    /** The stripe channels' outbound high water mark, which {@link #boundBytes()} counts. */
    public static final int WRITE_HIGH_WATER_BYTES = 8 << 20;

    private static final int HEADER_BYTES = 20;
    /** The longest ERROR frame that may refuse a stripe's join: a code and a detail cut short, with room to spare. */
    private static final int MAX_REFUSAL_BYTES = 64 << 10;

    private final Stripe[] stripes;
    private final long patienceNanos;
    private final Consumer<VgpuException> onFailure;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /** The number of the next chunk sent; the sending thread's. */
    private long nextSend;
    /** The number of the next chunk a frame must name; the receiving thread's. */
    private long nextReceive;

    private volatile VgpuException broken;
    private volatile boolean closed;
    /** Where the stripes land whole chunks as they arrive, once the receiver gave one; until then they keep them. */
    private volatile ChunkLander lander;

    /**
     * Memory a stripe may copy a chunk into on its own event loop as the chunk's last byte arrives, instead of keeping
     * it in the socket's buffers for the receiver to copy after its frame. Each stripe has room of its own, so that
     * one stripe running ahead never takes the room of the stripe whose chunk the receiver waits for.
     */
    public interface ChunkLander {
        /**
         * Whether the chunk {@code label} names, of {@code length} bytes, is landed at all: one that is not stays in
         * the socket's buffers. Called by a stripe's event loop.
         */
        boolean lands(ChunkLabel label, int length);

        /**
         * Room of stripe {@code stripe}'s own for its next chunk, which {@code label} names, of {@code length} bytes;
         * or, when that room is full, null, and {@code roomAgain} runs (from any thread, once) when it is not any more.
         * The stripe waits for that, reading nothing meanwhile. Called by the stripe's event loop.
         *
         * @throws IllegalArgumentException for a chunk it does not {@link #lands land}
         * @throws VgpuException VGPU_PROTOCOL_ERROR for a label whose chunk cannot be where it says: the path fails
         */
        Room reserve(int stripe, ChunkLabel label, int length, Runnable roomAgain);

        /**
         * Copies the next {@code length} bytes of {@code in} into stripe {@code stripe}'s room and returns them there,
         * the receiver's to release as any chunk; or, when that room is full, null, reading nothing ({@link #reserve}).
         */
        default ByteBuf land(int stripe, ChunkLabel label, ByteBuf in, int length, Runnable roomAgain) {
            Room room = reserve(stripe, label, length, roomAgain);
            if (room == null) {
                return null;
            }
            try {
                in.readBytes(room.memory().asByteBuffer());
            } catch (RuntimeException e) {
                room.abandon();
                throw e;
            }
            return room.filled();
        }
    }

    /** Memory a {@link ChunkLander} set aside for one chunk. Its stripe's event loop alone uses it. */
    public interface Room {
        /** Exactly the chunk's length. */
        MemorySegment memory();

        /** The chunk, once {@link #memory()} holds all its bytes: the receiver's to release as any chunk. */
        ByteBuf filled();

        /** Gives the room back unfilled: its stripe closed before the chunk was whole. */
        void abandon();
    }

    /**
     * A path over {@code stripes} connections, attached later ({@link #attach}).
     *
     * @param patience  how long a chunk's bytes may lag behind its frame, and a stripe take to join, before the path
     *     calls the session broken
     * @param onFailure told once why the path failed (a {@code VGPU_PROTOCOL_ERROR}), from any thread
     */
    public StripedStreams(int stripes, Duration patience, Consumer<VgpuException> onFailure) {
        if (stripes < 1 || stripes > StripedBulk.MAX_STRIPES) {
            throw new IllegalArgumentException(
                    "stripes must be in [1, " + StripedBulk.MAX_STRIPES + "], got " + stripes);
        }
        this.stripes = new Stripe[stripes];
        for (int i = 0; i < stripes; i++) {
            this.stripes[i] = new Stripe(i);
        }
        this.patienceNanos = patience.toNanos();
        this.onFailure = onFailure;
    }

    /** Lands the chunks that arrive from now on through {@code chunks} ({@link ChunkLander}); receiving side only. */
    public void landIn(ChunkLander chunks) {
        lander = chunks;
    }

    /** How many stripes the path has. */
    public int stripes() {
        return stripes.length;
    }

    /**
     * The handler that reads stripe {@code index}'s chunks on the side that took the stripe's HELLO: the last of its
     * channel's pipeline, where the bytes after the HELLO arrive.
     */
    public ChannelHandler reader(int index) {
        return new StripeReader(stripe(index), false);
    }

    /**
     * The handler that reads stripe {@code index}'s chunks on the side that said the stripe's HELLO, the last of its
     * channel's pipeline. The peer may refuse the join instead, with an ERROR frame where the stripe's first chunk
     * would be (a chunk header there carries the stripe's index, below {@value StripedBulk#MAX_STRIPES}; an ERROR
     * starts with its length, above that, then its opcode): the stripe then ends with the peer's reason, which whoever
     * waits for it hears. A refusal alone fails nothing: a worker reads each connection when its event loop gets to
     * it, so the HELLO of a stripe may come after its session ended, when no chunk will be awaited on it any more.
     */
    public ChannelHandler joinedReader(int index) {
        return new StripeReader(stripe(index), true);
    }

    /**
     * Makes {@code channel}, whose pipeline ends with {@link #reader reader(index)}, stripe {@code index}.
     *
     * @throws VgpuException VGPU_PROTOCOL_ERROR when that stripe joined already or there is no such stripe
     */
    public void attach(int index, Channel channel) {
        join(index, channel, true);
    }

    /**
     * As {@link #attach}, but chunks are sent on the stripe only once {@code settled} succeeded: the worker moves an
     * accepted stripe onto an event loop of its own first, and a chunk written before would be written from the loop
     * it leaves. Its chunks are read meanwhile. A stripe that fails to settle fails the path.
     */
    public void attach(int index, Channel channel, Future<?> settled) {
        join(index, channel, false);
        settled.addListener(done -> {
            if (done.isSuccess()) {
                lock.lock();
                try {
                    stripe(index).settled = true;
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            } else {
                fail(Frames.violation("stripe " + index + " did not settle on its event loop: "
                        + VgpuFailure.describe(done.cause())));
            }
        });
    }

    private void join(int index, Channel channel, boolean settled) {
        Stripe stripe = stripe(index);
        lock.lock();
        try {
            if (stripe.channel != null) {
                throw Frames.violation("stripe " + index + " joined the session twice");
            }
            stripe.channel = channel;
            stripe.settled = settled;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        if (closed || broken != null) {
            channel.close();
        }
    }

    private Stripe stripe(int index) {
        if (index < 0 || index >= stripes.length) {
            throw Frames.violation("stripe " + index + " is outside [0, " + stripes.length + ")");
        }
        return stripes[index];
    }

    @Override
    public int frameFlags() {
        return Frames.FLAG_IN_SLOT;
    }

    @Override
    public int maxChunkBytes() {
        return MAX_CHUNK_BYTES;
    }

    @Override
    public int trailerBytes(int length) {
        return 8;
    }

    @Override
    public ByteBuf send(MemorySegment src, long offset, int length, ChunkLabel label) {
        checkLength(length);
        Channel channel = awaitRoom(nextStripe());
        // the header and a copy of the bytes in one buffer: one write, and the caller's memory is free at once
        ByteBuf chunk = channel.alloc().directBuffer(HEADER_BYTES + length);
        try {
            writeHeader(chunk, length, label);
            // through segments: the source may be any heap array, which has no byte buffer view
            MemorySegment.copy(src, offset, MemorySegment.ofBuffer(chunk.nioBuffer(HEADER_BYTES, length)), 0, length);
            chunk.writerIndex(HEADER_BYTES + length);
        } catch (RuntimeException e) {
            chunk.release();
            throw e;
        }
        return write(channel, chunk, length, () -> {});
    }

    @Override
    public ByteBuf sendBorrowed(MemorySegment src, long offset, int length, ChunkLabel label, Runnable sent) {
        checkLength(length);
        Channel channel;
        try {
            channel = awaitRoom(nextStripe());
        } catch (RuntimeException e) {
            sent.run();
            throw e;
        }
        ByteBuf header = writeHeader(channel.alloc().directBuffer(HEADER_BYTES), length, label);
        ByteBuf chunk = length == 0
                ? header
                : Unpooled.wrappedBuffer(
                        header,
                        Unpooled.wrappedBuffer(src.asSlice(offset, length).asByteBuffer()));
        return write(channel, chunk, length, sent);
    }

    /** The next chunk's header, written into {@code chunk}. */
    private ByteBuf writeHeader(ByteBuf chunk, int length, ChunkLabel label) {
        return chunk.writeInt((int) nextSend)
                .writeInt(length)
                .writeInt(label.requestId())
                .writeLong(label.offset());
    }

    private static void checkLength(int length) {
        if (length < 0 || length > MAX_CHUNK_BYTES) {
            throw new IllegalArgumentException(
                    "a chunk of " + length + " bytes is over the stripes' bound of " + MAX_CHUNK_BYTES);
        }
    }

    /** The stripe the next chunk travels on. */
    private Stripe nextStripe() {
        return stripes[(int) (nextSend % stripes.length)];
    }

    /** Writes {@code chunk}, header and bytes, on {@code channel}, the next chunk's stripe; {@code sent} once written. */
    private ByteBuf write(Channel channel, ByteBuf chunk, int length, Runnable sent) {
        long number = nextSend;
        Stripe stripe = nextStripe();
        channel.writeAndFlush(chunk).addListener(written -> {
            sent.run();
            if (!written.isSuccess()) {
                fail(Frames.violation("stripe " + stripe.index + " failed to write a chunk: "
                        + VgpuFailure.describe(written.cause())));
            }
        });
        nextSend = number + 1;
        return Unpooled.buffer(8, 8).writeInt((int) number).writeInt(length);
    }

    /** Waits until {@code stripe} joined and can take more; the path's failure or close ends the wait. */
    private Channel awaitRoom(Stripe stripe) {
        VgpuException stuck;
        lock.lock();
        try {
            long deadline = System.nanoTime() + patienceNanos;
            while (true) {
                throwIfOver();
                if (stripe.channel != null && stripe.settled && stripe.channel.isWritable()) {
                    return stripe.channel;
                }
                long left = deadline - System.nanoTime();
                if (stripe.ended) {
                    stuck = Frames.violation(stripe.endedBecause("a chunk was to be sent on it"));
                    break;
                }
                if (left <= 0) {
                    stuck = Frames.violation(
                            stripe.channel == null || !stripe.settled
                                    ? "stripe " + stripe.index + " did not join within " + millis() + " ms"
                                    : "stripe " + stripe.index + " took no bytes for " + millis() + " ms");
                    break;
                }
                try {
                    changed.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(10)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for a stripe", e);
                }
            }
        } finally {
            lock.unlock();
        }
        fail(stuck);
        throw new IllegalStateException(stuck.getMessage(), stuck);
    }

    private void throwIfOver() {
        VgpuException failure = broken;
        if (failure != null) {
            throw new IllegalStateException("the stripes failed: " + failure.detail(), failure);
        }
        if (closed) {
            throw new IllegalStateException("the stripes were closed while a chunk waited for room");
        }
    }

    @Override
    public ByteBuf receive(ByteBuf trailer) {
        if (trailer.readableBytes() != 8) {
            throw Frames.violation("a chunk on the stripes is named in 8 bytes, got " + trailer.readableBytes());
        }
        int number = trailer.getInt(trailer.readerIndex());
        int length = trailer.getInt(trailer.readerIndex() + 4);
        long expected = nextReceive;
        if (number != (int) expected) {
            throw failed(Frames.violation("a frame names chunk " + Integer.toUnsignedString(number)
                    + " of the stripes where chunk " + Integer.toUnsignedString((int) expected) + " is next"));
        }
        Stripe stripe = stripes[(int) (expected % stripes.length)];
        ByteBuf chunk = null;
        VgpuException late = null;
        lock.lock();
        try {
            long deadline = System.nanoTime() + patienceNanos;
            while (late == null && stripe.arrived.isEmpty()) {
                VgpuException failure = broken;
                if (failure != null) {
                    throw new VgpuException(failure.code(), failure.detail(), failure);
                }
                if (closed) {
                    throw Frames.violation("the stripes were closed while chunk " + number + " was awaited");
                }
                long left = deadline - System.nanoTime();
                if (stripe.ended) {
                    late = Frames.violation(
                            stripe.endedBecause("chunk " + Integer.toUnsignedString(number) + " was awaited"));
                } else if (left <= 0) {
                    late = Frames.violation("chunk " + Integer.toUnsignedString(number) + " did not arrive on stripe "
                            + stripe.index + " within " + millis() + " ms of its frame");
                } else {
                    try {
                        changed.awaitNanos(left);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw Frames.violation("interrupted while chunk " + number + " was awaited");
                    }
                }
            }
            if (late == null) {
                chunk = stripe.arrived.poll();
                stripe.arrivedBytes -= chunk.readableBytes();
                if (stripe.paused && stripe.arrivedBytes < PAUSE_BYTES) {
                    stripe.paused = false;
                    stripe.readIfAllowed();
                }
            }
        } finally {
            lock.unlock();
        }
        if (late != null) {
            throw failed(late);
        }
        if (chunk.readableBytes() != length) {
            int carried = chunk.readableBytes();
            chunk.release();
            throw failed(Frames.violation("chunk " + Integer.toUnsignedString(number) + " carries " + carried
                    + " bytes on stripe " + stripe.index + ", its frame says " + length));
        }
        nextReceive = expected + 1;
        return chunk;
    }

    private long millis() {
        return TimeUnit.NANOSECONDS.toMillis(patienceNanos);
    }

    /** A chunk stripe {@code stripe} read, after its header was checked. Its event loop. */
    private void arrived(Stripe stripe, ByteBuf chunk) {
        lock.lock();
        try {
            if (closed || broken != null) {
                chunk.release();
                return;
            }
            stripe.arrived.add(chunk);
            stripe.arrivedBytes += chunk.readableBytes();
            if (stripe.arrivedBytes >= PAUSE_BYTES && !stripe.paused) {
                stripe.paused = true;
                stripe.readIfAllowed();
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void signal() {
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Fails the path with {@code why} and returns it, to throw. */
    private VgpuException failed(VgpuException why) {
        fail(why);
        return why;
    }

    /** The first failure wins: the stripes close, waiters give up, {@code onFailure} hears of it once. */
    private void fail(VgpuException why) {
        lock.lock();
        try {
            if (broken != null || closed) {
                return;
            }
            broken = why;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        closeStripes();
        onFailure.accept(why);
    }

    @Override
    public long boundBytes() {
        return (long) stripes.length * (PAUSE_BYTES + (long) MAX_CHUNK_BYTES + WRITE_HIGH_WATER_BYTES);
    }

    @Override
    public String describe() {
        return "striped over " + stripes.length + " TCP connections (one event loop each)";
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        closeStripes();
    }

    private void closeStripes() {
        lock.lock();
        try {
            for (Stripe stripe : stripes) {
                if (stripe.channel != null) {
                    stripe.channel.close();
                }
                ByteBuf chunk;
                while ((chunk = stripe.arrived.poll()) != null) {
                    chunk.release();
                }
                stripe.arrivedBytes = 0;
            }
        } finally {
            lock.unlock();
        }
    }

    /** One stripe: its channel once joined, and the chunks it read that no frame took yet. Guarded by the lock. */
    private static final class Stripe {
        final int index;
        Channel channel;
        /** Whether chunks may be written on {@link #channel}: it is on the event loop it stays on. */
        boolean settled;

        final ArrayDeque<ByteBuf> arrived = new ArrayDeque<>();
        long arrivedBytes;
        /** It holds {@link #PAUSE_BYTES} or more. */
        boolean paused;
        /** Its next chunk waits for room in the lander. */
        boolean awaitingRoom;
        /** Its connection closed: the chunks it read are still taken, a chunk still awaited on it never comes. */
        boolean ended;
        /** Why the peer refused the stripe's join, when it did. */
        VgpuException refusal;

        Stripe(int index) {
            this.index = index;
        }

        /** Reads its socket unless it holds too much or waits for room. */
        void readIfAllowed() {
            channel.config().setAutoRead(!paused && !awaitingRoom);
        }

        /** Why a chunk that {@code needed} it cannot go on this ended stripe. */
        String endedBecause(String needed) {
            return refusal != null
                    ? "stripe " + index + " was refused while " + needed + ": " + refusal.code() + ": "
                            + refusal.detail()
                    : "stripe " + index + " closed while " + needed;
        }
    }

    /**
     * Cuts a stripe's bytes into chunks, checking each header against the stripe's sequence; the chunks are slices
     * of the buffers the socket filled, kept apart (a composite) rather than merged into one.
     */
    private final class StripeReader extends ByteToMessageDecoder {
        private final Stripe stripe;
        /** Whether the peer may answer the stripe's HELLO with an ERROR before its first chunk. */
        private final boolean refusable;
        /** The number the stripe's next chunk must carry: stripe, stripe + stripes, ... */
        private long expected;
        /** The length of the chunk whose header was read, -1 between chunks. */
        private int length = -1;
        /** What the header of the chunk under way says it is. */
        private ChunkLabel label;
        /**
         * This channel's receive buffers where the stripe reads chunks straight into their lander's room (a
         * worker's plain TCP stripe, {@link ReadTargets}); null otherwise, or before a lander was given.
         */
        private ReadTargets reads;

        private boolean readsChecked;
        /** The room the chunk under way is read straight into; null when it is not. */
        private Room room;
        /** How many of the chunk's bytes are in {@link #room}. */
        private int roomFilled;
        /** The buffer over {@link #room} handed out for the read under way. */
        private ByteBuf roomRead;

        private ByteBufAllocator alloc;

        StripeReader(Stripe stripe, boolean refusable) {
            this.stripe = stripe;
            this.refusable = refusable;
            this.expected = stripe.index;
            setCumulator(COMPOSITE_CUMULATOR);
        }

        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
            while (true) {
                if (length < 0) {
                    if (refusable && expected == stripe.index && in.readableBytes() >= 8 && isError(in)) {
                        readRefusal(ctx, in);
                        return;
                    }
                    if (in.readableBytes() < HEADER_BYTES) {
                        return;
                    }
                    int number = in.readInt();
                    int announced = in.readInt();
                    int requestId = in.readInt();
                    long offset = in.readLong();
                    if (number != (int) expected) {
                        throw Frames.violation("stripe " + stripe.index + " carries chunk "
                                + Integer.toUnsignedString(number) + " where chunk "
                                + Integer.toUnsignedString((int) expected) + " is next on it");
                    }
                    if (announced < 0 || announced > MAX_CHUNK_BYTES) {
                        throw Frames.violation("stripe " + stripe.index + " announces a chunk of "
                                + Integer.toUnsignedString(announced) + " bytes, over the bound of "
                                + MAX_CHUNK_BYTES);
                    }
                    if (offset < 0) {
                        throw Frames.violation(
                                "stripe " + stripe.index + " labels chunk " + Integer.toUnsignedString(number)
                                        + " with the offset " + Long.toUnsignedString(offset));
                    }
                    length = announced;
                    label = new ChunkLabel(requestId, offset);
                }
                ReadTargets straight = straightReads(ctx);
                if (straight != null && in.readableBytes() < length) {
                    if (in.readableBytes() == 0 && lander.lands(label, length)) {
                        reserveRoom(ctx);
                        return;
                    }
                    // the rest of the body into Netty's buffers, and not a byte more: the next chunk's header then
                    // comes alone, and its body goes straight into its room
                    int rest = length - in.readableBytes();
                    straight.readInto(() -> alloc.directBuffer(rest, rest));
                }
                if (in.readableBytes() < length) {
                    return;
                }
                ByteBuf chunk = landed(ctx, in, length);
                if (chunk == null) {
                    return;
                }
                chunkDone(ctx, chunk);
            }
        }

        /** The chunk under way is whole: it goes to the path, and the next read takes the next chunk's header. */
        private void chunkDone(ChannelHandlerContext ctx, ByteBuf chunk) {
            arrived(stripe, chunk);
            length = -1;
            expected += stripes.length;
            ReadTargets straight = straightReads(ctx);
            if (straight != null) {
                // exactly a header: the body after it is then read where it goes
                straight.readInto(() -> alloc.directBuffer(HEADER_BYTES, HEADER_BYTES));
            }
        }

        /**
         * This channel's {@link ReadTargets} where the stripe may read chunks straight into a lander's room: there is
         * a lander, the channel reads through such buffers, and no handler before this one (TLS) changes the bytes.
         */
        private ReadTargets straightReads(ChannelHandlerContext ctx) {
            if (lander == null) {
                return null;
            }
            if (!readsChecked) {
                readsChecked = true;
                alloc = ctx.alloc();
                if (ctx.channel().config().getRecvByteBufAllocator() instanceof ReadTargets targets
                        && ctx.pipeline().get(SslHandler.class) == null) {
                    reads = targets;
                }
            }
            return reads;
        }

        /**
         * Sets room aside for the chunk whose header was read and points the channel's next reads into it; where the
         * lander has none, the stripe stops reading until it has (decoding then comes back here).
         */
        private void reserveRoom(ChannelHandlerContext ctx) {
            Room reserved = lander.reserve(stripe.index, label, length, roomAgainOn(ctx));
            if (reserved == null) {
                awaitRoom();
                return;
            }
            room = reserved;
            roomFilled = 0;
            reads.readInto(this::nextRoomRead);
        }

        /** An empty buffer over the part of {@link #room} still to be read. */
        private ByteBuf nextRoomRead() {
            roomRead = Unpooled.wrappedBuffer(room.memory().asSlice(roomFilled).asByteBuffer())
                    .clear();
            return roomRead;
        }

        /** Bytes read straight into the chunk's room count there; any other read is decoded. */
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
            if (msg != roomRead || room == null) {
                super.channelRead(ctx, msg);
                return;
            }
            roomRead = null;
            ByteBuf read = (ByteBuf) msg;
            roomFilled += read.readableBytes();
            read.release();
            if (roomFilled == length) {
                Room whole = room;
                room = null;
                chunkDone(ctx, whole.filled());
            }
        }

        /** A chunk read only in part into its room gives the room back: its bytes never come. */
        private void abandonRoom() {
            if (room != null) {
                room.abandon();
                room = null;
            }
            if (reads != null) {
                reads.readInto(null);
            }
        }

        @Override
        protected void handlerRemoved0(ChannelHandlerContext ctx) {
            abandonRoom();
        }

        /**
         * The chunk of {@code length} bytes at the reader index, landed by the path's lander if it lands it; null when
         * it waits for the lander's room, the stripe not reading until it has (the chunk's bytes stay where they are,
         * and decoding goes on from them then).
         */
        private ByteBuf landed(ChannelHandlerContext ctx, ByteBuf in, int length) {
            ChunkLander chunks = lander;
            if (chunks == null || !chunks.lands(label, length)) {
                return in.readRetainedSlice(length);
            }
            ByteBuf chunk = chunks.land(stripe.index, label, in, length, roomAgainOn(ctx));
            if (chunk == null) {
                awaitRoom();
            }
            return chunk;
        }

        /** The stripe stops reading until its lander has room again. */
        private void awaitRoom() {
            lock.lock();
            try {
                stripe.awaitingRoom = true;
                stripe.readIfAllowed();
            } finally {
                lock.unlock();
            }
        }

        /** What a lander runs, from any thread, once it has room again: decoding goes on on the stripe's loop. */
        private Runnable roomAgainOn(ChannelHandlerContext ctx) {
            return () -> ctx.executor().execute(() -> roomAgain(ctx));
        }

        /** The lander has room again: decoding goes on from the bytes kept, then the socket is read again. */
        private void roomAgain(ChannelHandlerContext ctx) {
            lock.lock();
            try {
                stripe.awaitingRoom = false;
                if (stripe.channel != null) {
                    stripe.readIfAllowed();
                }
            } finally {
                lock.unlock();
            }
            if (ctx.isRemoved()) {
                return;
            }
            try {
                // an empty read runs the decoder on what it holds, as the next bytes from the socket would
                channelRead(ctx, Unpooled.EMPTY_BUFFER);
                channelReadComplete(ctx);
            } catch (Exception e) {
                exceptionCaught(ctx, e);
            }
        }

        /** Whether the 8 bytes at the reader index are an ERROR frame's start rather than this stripe's first header. */
        private boolean isError(ByteBuf in) {
            int first = in.getInt(in.readerIndex());
            int opcodeAndFlags = in.getInt(in.readerIndex() + 4);
            return first != stripe.index && opcodeAndFlags >>> 16 == Opcode.ERROR.code();
        }

        /** Reads the peer's ERROR once it is whole: the stripe ends with it as its reason and closes. */
        private void readRefusal(ChannelHandlerContext ctx, ByteBuf in) {
            int frameLength = in.getInt(in.readerIndex());
            if (frameLength < Frames.MIN_LENGTH || frameLength > MAX_REFUSAL_BYTES) {
                throw Frames.violation("stripe " + stripe.index + " was answered with an ERROR of "
                        + Integer.toUnsignedString(frameLength) + " bytes, outside [" + Frames.MIN_LENGTH + ", "
                        + MAX_REFUSAL_BYTES + "]");
            }
            if (in.readableBytes() < Frames.LENGTH_FIELD_BYTES + frameLength) {
                return;
            }
            int start = in.readerIndex();
            Frame error = new Frame(
                    Opcode.ERROR,
                    in.getUnsignedShort(start + 6),
                    in.getInt(start + 8),
                    in.retainedSlice(start + Frames.HEADER_BYTES, frameLength - Frames.MIN_LENGTH));
            VgpuException refusal;
            try {
                refusal = ReplyDecoder.error(error);
            } finally {
                error.release();
            }
            in.skipBytes(in.readableBytes());
            lock.lock();
            try {
                stripe.refusal = refusal;
                stripe.ended = true;
                changed.signalAll();
            } finally {
                lock.unlock();
            }
            ctx.close();
        }

        /**
         * Not {@link ByteToMessageDecoder}'s: when a read produced no message and auto-read is off, that asks the
         * channel for more bytes. This reader hands its chunks over without producing messages, so a stripe that
         * stopped reading (holding too much, or waiting for room) would read on, and the bound would not hold.
         */
        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            discardSomeReadBytes();
            ctx.fireChannelReadComplete();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            signal();
            ctx.fireChannelWritabilityChanged();
        }

        /**
         * Not a failure yet: a peer ending the session closes its stripes while its last replies may still be on the
         * way. Whoever waits for this stripe from now on fails at once.
         */
        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            abandonRoom();
            lock.lock();
            try {
                stripe.ended = true;
                changed.signalAll();
            } finally {
                lock.unlock();
            }
            super.channelInactive(ctx);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            Throwable failure =
                    cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
            fail(
                    failure instanceof VgpuException violation
                            ? violation
                            : Frames.violation("stripe " + stripe.index + " failed: " + VgpuFailure.describe(failure)));
            ctx.close();
        }
    }
}
