package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.NettyLeaks;
import org.vgpu.runtime.remote.protocol.RequestEncoder;
import org.vgpu.runtime.remote.protocol.StripeOffer;

/**
 * A worker in this JVM taking stripes from a raw client: a client that offers none (one that predates stripes) gets
 * a WELCOME without an answer about them; one that offers them gets a stripe key, which a stripe connection must
 * present, the wrong key being refused as an authentication failure; bytes to the device arrive over a stripe; and a
 * frame naming a chunk out of order or a stripe carrying a chunk out of its sequence ends the session with
 * VGPU_PROTOCOL_ERROR, the worker unharmed and the vGPU freed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@ExtendWith(NettyLeaks.class)
class StripedWorkerTest {
    private static final String TOKEN = OneSessionWorker.TOKEN;
    private static final VaWindow WINDOW = OneSessionWorker.WINDOW;

    @RegisterExtension
    final OneSessionWorker worker = new OneSessionWorker();

    private RawClient connect() {
        return worker.connect();
    }

    /** Says HELLO offering {@code stripes} stripes; the WELCOME's answer. */
    private StripeOffer openStripedSession(RawClient client, int stripes) {
        assertEquals(
                "#1 welcome test-worker",
                client.send(e -> e.hello(1, new Hello(Frames.PROTOCOL_VERSION, TOKEN, WINDOW, false, stripes, -1)))
                        .read());
        return client.welcome().stripes();
    }

    private RawClient joinAsStripe(String key, int index) {
        return connect().send(e -> e.hello(0, new Hello(Frames.PROTOCOL_VERSION, key, WINDOW, false, 0, index)));
    }

    @Test
    void aClientThatOffersNoStripesGetsAWelcomeThatSaysNothingOfThem() {
        try (RawClient client = connect()) {
            assertEquals(
                    "#1 welcome test-worker",
                    client.helloOfferingSharedMemory(1, TOKEN, WINDOW).read());
            // the decoder finds no answer about stripes after the shared region's: the WELCOME a client of the
            // shared-memory version reads, byte for byte
            assertEquals(StripeOffer.NOT_ASKED, client.welcome().stripes().note());
            assertFalse(client.welcome().stripes().offered());
        }
    }

    @Test
    void aStripePresentingAnotherKeyIsRefusedAndTheSessionGoesOn() {
        try (RawClient client = connect()) {
            StripeOffer offer = openStripedSession(client, 2);
            assertEquals(2, offer.stripes());
            assertEquals(2 * StripeJoins.KEY_BYTES, offer.key().length(), "a key of 32 random bytes, in hex");
            String wrong =
                    (offer.key().charAt(0) == '0' ? "1" : "0") + offer.key().substring(1);
            try (RawClient stranger = joinAsStripe(wrong, 0)) {
                assertEquals(
                        "#0 error VGPU_AUTH_FAILED: worker test-worker has no session with the stripe key presented",
                        stranger.read());
                assertEquals("closed", stranger.read());
            }
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, WINDOW.base(), 4096)).read());
        }
    }

    @Test
    void bytesToTheDeviceArriveOverTheStripes() {
        try (RawClient client = connect()) {
            StripeOffer offer = openStripedSession(client, 2);
            try (RawClient stripe0 = joinAsStripe(offer.key(), 0);
                    RawClient stripe1 = joinAsStripe(offer.key(), 1)) {
                assertEquals(
                        "#2 ok 0 bytes",
                        client.send(e -> e.memAllocAt(2, WINDOW.base(), 4096)).read());
                stripe1.sendBytes(chunk(1, 3, 2, new byte[] {5, 6, 7}));
                stripe0.sendBytes(chunk(0, 3, 0, new byte[] {1, 2}));
                client.sendBytes(chunkOnStripes(3, true, 0, WINDOW.base(), 2));
                client.sendBytes(chunkOnStripes(3, false, 1, WINDOW.base() + 2, 3));
                // the copy is answered once both chunks came off their stripes, in the order of their frames (the
                // contents both ways are the conformance suite's, over real stripes)
                assertEquals("#3 ok 0 bytes", client.read());
            }
        }
    }

    @Test
    void bytesFromTheDeviceComeBackOverTheStripesEachWrittenFromItsOwnLoop() {
        try (RawClient client = connect()) {
            StripeOffer offer = openStripedSession(client, 2);
            try (RawClient stripe0 = joinAsStripe(offer.key(), 0);
                    RawClient stripe1 = joinAsStripe(offer.key(), 1)) {
                assertEquals(
                        "#2 ok 0 bytes",
                        client.send(e -> e.memAllocAt(2, WINDOW.base(), 4096)).read());
                stripe0.sendBytes(chunk(0, 3, 0, new byte[] {1, 2, 3, 4, 5, 6}));
                client.sendBytes(chunkOnStripes(3, false, 0, WINDOW.base(), 6));
                assertEquals("#3 ok 0 bytes", client.read());
                // 6 bytes in chunks of 4: chunk 0 on stripe 0, chunk 1 on stripe 1; each frame names its chunk
                client.send(e -> e.memcpyDtoH(4, false, 0, WINDOW.base(), 6, 4));
                assertEquals("#4 data@0 8 bytes more [0000000000000004]", client.read());
                assertEquals("#4 data@4 8 bytes [0000000100000002]", client.read());
                // each chunk's header names the request and where in its bytes the chunk starts
                assertArrayEquals(chunk(0, 4, 0, new byte[] {1, 2, 3, 4}), stripe0.readRaw(24));
                assertArrayEquals(chunk(1, 4, 4, new byte[] {5, 6}), stripe1.readRaw(22));
            }
        }
    }

    @Test
    void aLargeChunkLandedByItsStripeReachesTheDeviceWhole() {
        int length = LandingSlots.MIN_LANDED_BYTES;
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) (i * 13 + 1);
        }
        try (RawClient client = connect()) {
            StripeOffer offer = openStripedSession(client, 1);
            try (RawClient stripe = joinAsStripe(offer.key(), 0)) {
                assertEquals(
                        "#2 ok 0 bytes",
                        client.send(e -> e.memAllocAt(2, WINDOW.base(), length)).read());
                stripe.sendBytes(chunk(0, 3, 0, bytes));
                client.sendBytes(chunkOnStripes(3, false, 0, WINDOW.base(), length));
                assertEquals("#3 ok 0 bytes", client.read());
                client.send(e -> e.memcpyDtoH(4, false, 0, WINDOW.base(), length, length));
                assertEquals("#4 data@0 8 bytes [0000000000010000]", client.read());
                assertArrayEquals(chunk(0, 4, 0, bytes), stripe.readRaw(20 + length));
            }
        }
    }

    @Test
    void aFrameNamingAChunkOutOfOrderEndsTheSessionAndTheWorkerGoesOn() throws InterruptedException {
        try (RawClient client = connect()) {
            StripeOffer offer = openStripedSession(client, 1);
            RawClient stripe = joinAsStripe(offer.key(), 0);
            try {
                assertEquals(
                        "#2 ok 0 bytes",
                        client.send(e -> e.memAllocAt(2, WINDOW.base(), 4096)).read());
                client.sendBytes(chunkOnStripes(3, false, 5, WINDOW.base(), 4));
                assertEquals(
                        "#0 error VGPU_PROTOCOL_ERROR: a frame names chunk 5 of the stripes where chunk 0 is next",
                        client.read());
                assertEquals("closed", client.read());
            } finally {
                stripe.close();
            }
        }
        assertFreedAndServingAgain();
    }

    @Test
    void aStripeCarryingAChunkOutOfItsSequenceEndsTheSession() throws InterruptedException {
        try (RawClient client = connect()) {
            StripeOffer offer = openStripedSession(client, 2);
            try (RawClient stripe = joinAsStripe(offer.key(), 1)) {
                // stripe 1 carries chunks 1, 3, 5...
                stripe.sendBytes(chunk(0, 3, 0, new byte[] {1}));
                assertEquals(
                        "#0 error VGPU_PROTOCOL_ERROR: stripe 1 carries chunk 0 where chunk 1 is next on it",
                        client.read());
                assertEquals("closed", client.read());
            }
        }
        assertFreedAndServingAgain();
    }

    /** Chunk {@code number} as a stripe carries it: the bytes of request {@code requestId} from {@code offset}. */
    private static byte[] chunk(int number, int requestId, long offset, byte[] bytes) {
        ByteBuf chunk = Unpooled.buffer()
                .writeInt(number)
                .writeInt(bytes.length)
                .writeInt(requestId)
                .writeLong(offset)
                .writeBytes(bytes);
        try {
            return ByteBufUtil.getBytes(chunk);
        } finally {
            chunk.release();
        }
    }

    /** A MEMCPY_HTOD chunk of request {@code id} whose bytes are chunk {@code number} of the stripes. */
    private static byte[] chunkOnStripes(int id, boolean more, int number, long dst, int length) {
        ByteBuf frame = Unpooled.buffer();
        try {
            new RequestEncoder().wrap(frame).memcpyHtoDChunkHeader(id, false, more, 0, dst, 8);
            Frames.addFlags(frame, 0, Frames.FLAG_IN_SLOT);
            frame.writeInt(number).writeInt(length);
            return ByteBufUtil.getBytes(frame);
        } finally {
            frame.release();
        }
    }

    private void assertFreedAndServingAgain() throws InterruptedException {
        WorkerReport report = worker.assertEndedUncleanAndFreed();
        assertTrue(report.endReason().contains("protocol error"), report.endReason());
    }
}
