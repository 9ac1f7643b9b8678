package org.vgpu.runtime.remote.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vgpu.runtime.remote.transport.StripeWire.chunk;
import static org.vgpu.runtime.remote.transport.StripeWire.header;
import static org.vgpu.runtime.remote.transport.StripeWire.trailer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;

/**
 * The stripes' reassembly, on channels whose bytes the test hands in: chunks arriving on their stripes in any order
 * are taken in the order their frames name them, intact across reads that split them; headers out of sequence or
 * over the bound, frames naming chunks out of order or with another length, a stripe that closes and a chunk that
 * never comes all fail the path once, as a protocol error, without a hang; a stripe that holds too much stops reading
 * until its chunks are taken.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class StripedStreamsTest {
    private static final ChunkLabel LABEL = new ChunkLabel(1, 0);
    private final AtomicReference<VgpuException> failure = new AtomicReference<>();
    private final List<EmbeddedChannel> channels = new ArrayList<>();

    @AfterEach
    void closeChannels() {
        channels.forEach(EmbeddedChannel::finishAndReleaseAll);
    }

    private StripedStreams path(int stripes, Duration patience) {
        StripedStreams path = new StripedStreams(stripes, patience, why -> assertNull(failure.getAndSet(why)));
        for (int i = 0; i < stripes; i++) {
            EmbeddedChannel channel = new EmbeddedChannel(path.reader(i));
            channels.add(channel);
            path.attach(i, channel);
        }
        return path;
    }

    private static byte[] bytes(ByteBuf chunk) {
        byte[] bytes = new byte[chunk.readableBytes()];
        chunk.getBytes(chunk.readerIndex(), bytes);
        chunk.release();
        return bytes;
    }

    private byte[] take(StripedStreams path, int number, int length) {
        ByteBuf trailer = trailer(number, length);
        try {
            return bytes(path.receive(trailer));
        } finally {
            trailer.release();
        }
    }

    @Test
    void chunksArrivingOnTheirStripesInAnyOrderAreTakenInTheOrderOfTheirFrames() {
        StripedStreams path = path(3, Duration.ofSeconds(5));
        // chunks 0..5 over 3 stripes: stripe 0 carries 0 and 3, stripe 1 carries 1 and 4, stripe 2 carries 2 and 5
        channels.get(2).writeInbound(chunk(2, new byte[] {2}), chunk(5, new byte[] {5, 5}));
        channels.get(1).writeInbound(chunk(1, new byte[] {1}));
        channels.get(0).writeInbound(chunk(0, new byte[] {0}), chunk(3, new byte[] {3, 3, 3}));
        channels.get(1).writeInbound(chunk(4, new byte[0]));
        assertArrayEquals(new byte[] {0}, take(path, 0, 1));
        assertArrayEquals(new byte[] {1}, take(path, 1, 1));
        assertArrayEquals(new byte[] {2}, take(path, 2, 1));
        assertArrayEquals(new byte[] {3, 3, 3}, take(path, 3, 3));
        assertArrayEquals(new byte[0], take(path, 4, 0));
        assertArrayEquals(new byte[] {5, 5}, take(path, 5, 2));
        assertNull(failure.get());
    }

    @Test
    void aLanderTakesWholeChunksAsTheyArriveAndThoseItDoesNotLandStayInTheSocketsBuffers() {
        StripedStreams path = path(2, Duration.ofSeconds(5));
        List<ByteBuf> landed = new ArrayList<>();
        // it lands chunks of 3 bytes and more
        path.landIn(new StripedStreams.ChunkLander() {
            @Override
            public boolean lands(ChunkLabel label, int length) {
                return length >= 3;
            }

            @Override
            public StripedStreams.Room reserve(int stripe, ChunkLabel label, int length, Runnable roomAgain) {
                return new TestRoom(length, landed);
            }
        });
        ByteBuf wire = chunk(0, new byte[] {1, 2, 3});
        // split inside the chunk: it is landed once whole, not piece by piece
        channels.get(0).writeInbound(wire.readRetainedSlice(6));
        assertTrue(landed.isEmpty(), "a partial chunk is not landed");
        channels.get(0).writeInbound(wire);
        channels.get(1).writeInbound(chunk(1, new byte[] {4, 5}));
        assertEquals(1, landed.size());
        ByteBuf trailer = trailer(0, 3);
        ByteBuf first = path.receive(trailer);
        trailer.release();
        assertSame(landed.get(0), first, "chunk 0 is the lander's buffer");
        assertArrayEquals(new byte[] {1, 2, 3}, bytes(first));
        assertArrayEquals(new byte[] {4, 5}, take(path, 1, 2));
        assertNull(failure.get());
    }

    @Test
    void aChunkSplitOverManyReadsArrivesWhole() {
        StripedStreams path = path(2, Duration.ofSeconds(5));
        byte[] payload = new byte[10_000];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) (i * 31);
        }
        ByteBuf wire = chunk(0, payload);
        while (wire.isReadable()) {
            channels.get(0).writeInbound(wire.readRetainedSlice(Math.min(777, wire.readableBytes())));
        }
        wire.release();
        assertArrayEquals(payload, take(path, 0, payload.length));
    }

    @Test
    void aFrameWaitsForItsChunkThatComesLater() throws Exception {
        StripedStreams path = path(2, Duration.ofSeconds(10));
        CompletableFuture<byte[]> taken = CompletableFuture.supplyAsync(() -> take(path, 0, 2));
        Thread.sleep(50);
        assertFalse(taken.isDone(), "the chunk is not there yet");
        channels.get(0).writeInbound(chunk(0, new byte[] {7, 8}));
        assertArrayEquals(new byte[] {7, 8}, taken.get(5, TimeUnit.SECONDS));
    }

    @Test
    void whatIsSentComesOutOnTheStripesAndIsReassembledAtTheFarEndEachChunkLabelledAsSent() {
        StripedStreams sender = path(3, Duration.ofSeconds(5));
        List<EmbeddedChannel> senderChannels = List.copyOf(channels);
        StripedStreams receiver = path(3, Duration.ofSeconds(5));
        List<EmbeddedChannel> receiverChannels = channels.subList(3, 6);
        // a lander that lands nothing, asked about each chunk as its header arrives
        Set<ChunkLabel> asked = new HashSet<>();
        receiver.landIn(new StripedStreams.ChunkLander() {
            @Override
            public boolean lands(ChunkLabel label, int length) {
                assertTrue(asked.add(label), "asked once about " + label);
                return false;
            }

            @Override
            public StripedStreams.Room reserve(int stripe, ChunkLabel label, int length, Runnable roomAgain) {
                throw new AssertionError("reserved a chunk it does not land");
            }
        });
        byte[] all = new byte[7 * 1000];
        for (int i = 0; i < all.length; i++) {
            all[i] = (byte) (i ^ (i >> 8));
        }
        List<ByteBuf> trailers = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment src = arena.allocate(all.length);
            MemorySegment.copy(all, 0, src, ValueLayout.JAVA_BYTE, 0, all.length);
            for (int chunk = 0; chunk < 7; chunk++) {
                trailers.add(
                        chunk % 2 == 0
                                ? sender.send(src, chunk * 1000L, 1000, new ChunkLabel(9, chunk * 1000L))
                                : sender.sendBorrowed(
                                        src, chunk * 1000L, 1000, new ChunkLabel(9, chunk * 1000L), () -> {}));
            }
            for (int stripe = 2; stripe >= 0; stripe--) {
                ByteBuf written;
                while ((written = senderChannels.get(stripe).readOutbound()) != null) {
                    receiverChannels.get(stripe).writeInbound(written);
                }
            }
            // borrowed chunks are the caller's memory until read: the arena stays open till then
            for (int chunk = 0; chunk < 7; chunk++) {
                ByteBuf trailer = trailers.get(chunk);
                byte[] got = bytes(receiver.receive(trailer));
                trailer.release();
                byte[] want = new byte[1000];
                System.arraycopy(all, chunk * 1000, want, 0, 1000);
                assertArrayEquals(want, got, "chunk " + chunk);
                assertTrue(asked.contains(new ChunkLabel(9, chunk * 1000L)), "chunk " + chunk + " came labelled");
            }
        }
        assertEquals(7, asked.size());
    }

    @Test
    void aFrameNamingAChunkOutOfOrderIsAProtocolError() {
        StripedStreams path = path(2, Duration.ofSeconds(5));
        channels.get(1).writeInbound(chunk(1, new byte[] {1}));
        VgpuException e = assertThrows(VgpuException.class, () -> take(path, 1, 1));
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, e.code());
        assertEquals("a frame names chunk 1 of the stripes where chunk 0 is next", e.detail());
        assertEquals(e, failure.get(), "the session hears of it");
        assertFalse(channels.get(0).isOpen(), "the stripes close");
    }

    @Test
    void aFrameWhoseLengthDisagreesWithItsChunkIsAProtocolError() {
        StripedStreams path = path(1, Duration.ofSeconds(5));
        channels.get(0).writeInbound(chunk(0, new byte[] {1, 2, 3}));
        VgpuException e = assertThrows(VgpuException.class, () -> take(path, 0, 2));
        assertEquals("chunk 0 carries 3 bytes on stripe 0, its frame says 2", e.detail());
        assertNotNull(failure.get());
    }

    @Test
    void aChunkOnTheWrongStripeFailsThePath() {
        path(2, Duration.ofSeconds(5));
        // chunk 1 belongs on stripe 1
        channels.get(0).writeInbound(chunk(1, new byte[] {1}));
        assertEquals(
                "stripe 0 carries chunk 1 where chunk 0 is next on it",
                failure.get().detail());
        assertFalse(channels.get(0).isOpen());
        assertFalse(channels.get(1).isOpen());
    }

    @Test
    void aChunkOverTheBoundFailsThePathBeforeItsBytesAreBuffered() {
        path(1, Duration.ofSeconds(5));
        channels.get(0).writeInbound(header(0, StripedStreams.MAX_CHUNK_BYTES + 1));
        assertEquals(
                "stripe 0 announces a chunk of " + (StripedStreams.MAX_CHUNK_BYTES + 1) + " bytes, over the bound of "
                        + StripedStreams.MAX_CHUNK_BYTES,
                failure.get().detail());
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, failure.get().code());
    }

    @Test
    void aStripeThatClosesMidCopyFailsTheWaitingReceiverAtOnce() throws Exception {
        StripedStreams path = path(2, Duration.ofSeconds(60));
        channels.get(0).writeInbound(chunk(0, new byte[] {0}));
        assertArrayEquals(new byte[] {0}, take(path, 0, 1));
        CompletableFuture<byte[]> waiting = CompletableFuture.supplyAsync(() -> take(path, 1, 1));
        Thread.sleep(50);
        channels.get(1).close();
        Throwable cause = assertThrows(Exception.class, () -> waiting.get(5, TimeUnit.SECONDS))
                .getCause();
        VgpuException e = (VgpuException) cause;
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, e.code());
        assertEquals("stripe 1 closed while chunk 1 was awaited", e.detail());
        assertEquals(e, failure.get(), "the session hears of it");
        assertThrows(IllegalStateException.class, () -> path.send(MemorySegment.ofArray(new byte[1]), 0, 1, LABEL));
    }

    @Test
    void aStripeThatClosesAfterItsLastChunkArrivedStillDeliversIt() {
        StripedStreams path = path(1, Duration.ofSeconds(60));
        channels.get(0).writeInbound(chunk(0, new byte[] {4}));
        channels.get(0).close();
        assertArrayEquals(new byte[] {4}, take(path, 0, 1), "a peer ending the session closes its stripes last");
        assertNull(failure.get());
        VgpuException e = assertThrows(VgpuException.class, () -> take(path, 1, 1));
        assertEquals("stripe 0 closed while chunk 1 was awaited", e.detail());
    }

    @Test
    void aJoinTheWorkerRefusedEndsTheStripeWithItsReasonAndFailsOnlyWhatNeedsIt() {
        StripedStreams path = new StripedStreams(2, Duration.ofSeconds(60), why -> assertNull(failure.getAndSet(why)));
        for (int i = 0; i < 2; i++) {
            EmbeddedChannel channel = new EmbeddedChannel(path.joinedReader(i));
            channels.add(channel);
            path.attach(i, channel);
        }
        // what a worker answers a stripe whose session it no longer has, cut into two reads
        ByteBuf refusal = Unpooled.buffer();
        new ReplyEncoder()
                .wrap(refusal)
                .error(0, ErrorCode.VGPU_AUTH_FAILED, "worker w12 has no session with the stripe key presented");
        channels.get(1).writeInbound(refusal.readRetainedSlice(10));
        channels.get(1).writeInbound(refusal);
        assertFalse(channels.get(1).isOpen(), "the refused stripe is closed");
        assertNull(failure.get(), "a refusal alone fails nothing: the session may be over already");
        channels.get(0).writeInbound(chunk(0, new byte[] {9}));
        assertArrayEquals(new byte[] {9}, take(path, 0, 1), "the other stripe goes on");
        VgpuException e = assertThrows(VgpuException.class, () -> take(path, 1, 1));
        assertEquals(
                "stripe 1 was refused while chunk 1 was awaited: VGPU_AUTH_FAILED: worker w12 has no session with the"
                        + " stripe key presented",
                e.detail());
        assertEquals(e, failure.get());
    }

    @Test
    void aStripeOfTheWorkersSideReadsAnErrorFrameAsTheChunkHeaderItIsNot() {
        path(2, Duration.ofSeconds(60));
        ByteBuf frame = Unpooled.buffer();
        new ReplyEncoder().wrap(frame).error(0, ErrorCode.VGPU_AUTH_FAILED, "no");
        int length = frame.getInt(0);
        channels.get(1).writeInbound(frame);
        assertEquals(
                "stripe 1 carries chunk " + length + " where chunk 1 is next on it",
                failure.get().detail(),
                "a client never refuses a worker's stripe: only the side that joined reads a refusal");
    }

    @Test
    void aChunkThatNeverComesFailsThePathAfterThePatience() {
        StripedStreams path = path(1, Duration.ofMillis(100));
        VgpuException e = assertThrows(VgpuException.class, () -> take(path, 0, 1));
        assertEquals("chunk 0 did not arrive on stripe 0 within 100 ms of its frame", e.detail());
        assertEquals(e, failure.get());
    }

    @Test
    void aSenderWaitsForAStripeToJoinAndGivesUpWhenThePathCloses() throws Exception {
        StripedStreams path = new StripedStreams(1, Duration.ofSeconds(60), why -> failure.set(why));
        CompletableFuture<ByteBuf> sending =
                CompletableFuture.supplyAsync(() -> path.send(MemorySegment.ofArray(new byte[4]), 0, 4, LABEL));
        Thread.sleep(50);
        assertFalse(sending.isDone());
        path.close();
        Throwable cause = assertThrows(Exception.class, () -> sending.get(5, TimeUnit.SECONDS))
                .getCause();
        assertTrue(cause instanceof IllegalStateException, String.valueOf(cause));
        assertNull(failure.get(), "closing is no failure");
    }

    @Test
    void aStripeHoldingTooMuchStopsReadingUntilItsChunksAreTaken() {
        StripedStreams path = path(1, Duration.ofSeconds(5));
        EmbeddedChannel stripe = channels.get(0);
        int chunkBytes = 1 << 20;
        int chunks = StripedStreams.PAUSE_BYTES / chunkBytes;
        for (int i = 0; i < chunks; i++) {
            stripe.writeInbound(chunk(i, new byte[chunkBytes]));
        }
        assertFalse(stripe.config().isAutoRead(), "the stripe stops reading at " + StripedStreams.PAUSE_BYTES);
        take(path, 0, chunkBytes);
        assertTrue(stripe.config().isAutoRead(), "and reads again once a chunk was taken");
        path.close();
    }

    @Test
    void aStripeThatStoppedReadingAsksItsChannelForNoMoreBytes() {
        StripedStreams path = new StripedStreams(1, Duration.ofSeconds(5), why -> assertNull(failure.getAndSet(why)));
        AtomicInteger readsAsked = new AtomicInteger();
        EmbeddedChannel stripe = new EmbeddedChannel(
                new ChannelOutboundHandlerAdapter() {
                    @Override
                    public void read(ChannelHandlerContext ctx) {
                        readsAsked.incrementAndGet();
                        ctx.read();
                    }
                },
                path.reader(0));
        channels.add(stripe);
        path.attach(0, stripe);
        int chunkBytes = 1 << 20;
        for (int i = 0; i < StripedStreams.PAUSE_BYTES / chunkBytes; i++) {
            stripe.writeInbound(chunk(i, new byte[chunkBytes]));
        }
        assertFalse(stripe.config().isAutoRead());
        int asked = readsAsked.get();
        // bytes of a read already under way when the stripe stopped still arrive, and end with a read's completion
        stripe.writeInbound(Unpooled.buffer().writeInt(PAUSE_CHUNKS));
        assertEquals(asked, readsAsked.get(), "a stripe holding its bound asks for no more bytes");
        take(path, 0, chunkBytes);
        assertTrue(stripe.config().isAutoRead());
        assertTrue(readsAsked.get() > asked, "it reads again once a chunk was taken");
        path.close();
    }

    private static final int PAUSE_CHUNKS = StripedStreams.PAUSE_BYTES >> 20;

    @Test
    void aStripeWhoseLanderHasNoRoomWaitsForItAndThenLandsWhatItKept() {
        StripedStreams path = path(1, Duration.ofSeconds(5));
        List<Runnable> waiting = new ArrayList<>();
        List<ByteBuf> landed = new ArrayList<>();
        AtomicBoolean room = new AtomicBoolean(true);
        // room for one chunk until the test gives more
        path.landIn(new StripedStreams.ChunkLander() {
            @Override
            public boolean lands(ChunkLabel label, int length) {
                return true;
            }

            @Override
            public StripedStreams.Room reserve(int stripe, ChunkLabel label, int length, Runnable roomAgain) {
                if (!room.get()) {
                    waiting.add(roomAgain);
                    return null;
                }
                room.set(false);
                return new TestRoom(length, landed);
            }
        });
        EmbeddedChannel stripe = channels.get(0);
        stripe.writeInbound(chunk(0, new byte[] {1}), chunk(1, new byte[] {2, 3}));
        assertEquals(1, landed.size(), "the second chunk waits for room");
        assertFalse(stripe.config().isAutoRead(), "and the stripe reads nothing meanwhile");
        assertArrayEquals(new byte[] {1}, take(path, 0, 1));
        assertFalse(stripe.config().isAutoRead(), "taking a chunk gives no room: the lander does");
        room.set(true);
        waiting.getLast().run();
        stripe.runPendingTasks();
        assertTrue(stripe.config().isAutoRead());
        assertEquals(2, landed.size());
        assertArrayEquals(new byte[] {2, 3}, take(path, 1, 2));
        assertNull(failure.get());
    }

    @Test
    void aStripeMayJoinOnlyOnce() {
        StripedStreams path = path(1, Duration.ofSeconds(5));
        VgpuException e = assertThrows(VgpuException.class, () -> path.attach(0, new EmbeddedChannel()));
        assertEquals("stripe 0 joined the session twice", e.detail());
        VgpuException outside = assertThrows(VgpuException.class, () -> path.attach(1, new EmbeddedChannel()));
        assertEquals("stripe 1 is outside [0, 1)", outside.detail());
    }

    /** Room of a test's lander: a direct buffer of the chunk's length, kept in {@code landed} once filled. */
    static final class TestRoom implements StripedStreams.Room {
        private final ByteBuf into;
        private final List<ByteBuf> landed;

        TestRoom(int length, List<ByteBuf> landed) {
            this.into = Unpooled.directBuffer(length, length);
            this.landed = landed;
        }

        @Override
        public MemorySegment memory() {
            return MemorySegment.ofBuffer(into.nioBuffer(0, into.capacity()));
        }

        @Override
        public ByteBuf filled() {
            into.writerIndex(into.capacity());
            landed.add(into);
            return into;
        }

        @Override
        public void abandon() {
            into.release();
        }
    }
}
