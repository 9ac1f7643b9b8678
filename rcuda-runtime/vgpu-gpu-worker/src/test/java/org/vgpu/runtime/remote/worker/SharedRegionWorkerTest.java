package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.NettyLeaks;
import org.vgpu.runtime.remote.protocol.RequestEncoder;
import org.vgpu.runtime.remote.protocol.SharedRegionOffer;
import org.vgpu.runtime.remote.transport.ChunkLabel;
import org.vgpu.runtime.remote.transport.SharedMemoryRing;

/**
 * A worker in this JVM offering shared memory to a raw client: the region it creates is its user's alone and gone
 * from the filesystem once the session's first request came; a client that did not acknowledge it stays in-band;
 * and frames that name slots that do not exist, hold more than a slot, were not filled or come without a region
 * end the session with VGPU_PROTOCOL_ERROR, the worker unharmed and the vGPU freed.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@ExtendWith(NettyLeaks.class)
class SharedRegionWorkerTest {
    private static final String TOKEN = OneSessionWorker.TOKEN;
    private static final VaWindow WINDOW = OneSessionWorker.WINDOW;

    @RegisterExtension
    final OneSessionWorker worker = new OneSessionWorker();

    private RawClient connect() {
        return worker.connect();
    }

    /** Says HELLO offering shared memory, maps the region offered and acknowledges it. */
    private SharedMemoryRing openSharedSession(RawClient client) throws IOException {
        assertEquals(
                "#1 welcome test-worker",
                client.helloOfferingSharedMemory(1, TOKEN, WINDOW).read());
        SharedRegionOffer offer = client.welcome().sharedRegion();
        assertTrue(offer.offered(), offer.toString());
        SharedMemoryRing ring = SharedMemoryRing.open(Path.of(offer.path()), offer.nonce());
        ring.acknowledge();
        return ring;
    }

    @Test
    void theRegionIsTheWorkersUsersAloneAndGoneOnceTheSessionsFirstRequestCame() throws IOException {
        try (RawClient client = connect()) {
            assertEquals(
                    "#1 welcome test-worker",
                    client.helloOfferingSharedMemory(1, TOKEN, WINDOW).read());
            Path region = Path.of(client.welcome().sharedRegion().path());
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(region)));
            assertEquals(
                    SharedMemoryRing.regionBytes(8, 1 << 20),
                    Files.size(region),
                    "8 slots of a chunk each way and a page: the bound docs/internals/remote.md states");
            SharedMemoryRing.open(region, client.welcome().sharedRegion().nonce())
                    .acknowledge();
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, WINDOW.base(), 1 << 20)).read());
            assertFalse(Files.exists(region), "unlinked once the client had its chance to map it");
        }
    }

    @Test
    void aClientThatDidNotAcknowledgeTheRegionCopiesInBand() throws IOException {
        try (RawClient client = connect()) {
            assertEquals(
                    "#1 welcome test-worker",
                    client.helloOfferingSharedMemory(1, TOKEN, WINDOW).read());
            Path region = Path.of(client.welcome().sharedRegion().path());
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, WINDOW.base(), 4096)).read());
            assertFalse(Files.exists(region));
            assertEquals(
                    "#3 ok 0 bytes",
                    client.send(e -> e.memcpyHtoDChunk(
                                    3, false, false, 0, WINDOW.base(), MemorySegment.ofArray(new byte[] {1, 2}), 0, 2))
                            .read());
            assertEquals(
                    "#4 data@0 2 bytes [0102]",
                    client.send(e -> e.memcpyDtoH(4, false, 0, WINDOW.base(), 2, 4096))
                            .read());
        }
    }

    @Test
    void bytesTravelThroughTheSlotsBothWays() throws IOException {
        try (RawClient client = connect()) {
            SharedMemoryRing ring = openSharedSession(client);
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, WINDOW.base(), 4096)).read());
            ByteBuf trailer = ring.send(MemorySegment.ofArray(new byte[] {7, 6, 5}), 0, 3, new ChunkLabel(3, 0));
            assertEquals(
                    "#3 ok 0 bytes", client.sendBytes(chunkInSlot(3, trailer)).read());
            trailer.release();
            // the reply's trailer names the worker's slot: the raw client shows those 8 bytes
            assertEquals(
                    "#4 data@0 8 bytes [0000000000000003]",
                    client.send(e -> e.memcpyDtoH(4, false, 0, WINDOW.base(), 3, 4096))
                            .read());
            ByteBuf bytes = ring.receive(Unpooled.buffer(8).writeInt(0).writeInt(3));
            assertEquals("070605", ByteBufUtil.hexDump(bytes));
            bytes.release();
        }
    }

    @ParameterizedTest(name = "slot {0}, length {1}")
    @CsvSource({
        "8, 4, 'shared slot 8 is outside [0, 8)'",
        "-1, 4, 'shared slot -1 is outside [0, 8)'",
        "0, 1048577, 'a chunk of 1048577 bytes in a shared slot of 1048576 bytes'",
        "0, -5, 'a chunk of -5 bytes in a shared slot of 1048576 bytes'",
        "3, 4, 'shared slot 3 was named by a frame but not filled'",
    })
    void aChunkNamingNoFilledSlotEndsTheSessionAndTheWorkerGoesOn(int slot, int length, String detail)
            throws IOException, InterruptedException {
        try (RawClient client = connect()) {
            openSharedSession(client);
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, WINDOW.base(), 4096)).read());
            String reply = client.sendBytes(
                            chunkInSlot(3, Unpooled.buffer(8).writeInt(slot).writeInt(length)))
                    .read();
            // a broken protocol is the session's failure, request id 0, before the worker closes the connection
            assertEquals("#0 error VGPU_PROTOCOL_ERROR: " + detail, reply);
            assertEquals("closed", client.read());
        }
        assertFreedAndServingAgain();
    }

    @Test
    void aChunkNamingASlotInASessionWithoutARegionIsAProtocolError() throws IOException, InterruptedException {
        try (RawClient client = connect()) {
            assertEquals(
                    "#1 welcome test-worker",
                    client.send(e -> e.hello(1, new Hello(1, TOKEN, WINDOW))).read());
            assertEquals(1, client.welcome().protocolVersion(), "a client of version 1 is answered in version 1");
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, WINDOW.base(), 4096)).read());
            String reply = client.sendBytes(
                            chunkInSlot(3, Unpooled.buffer(8).writeInt(0).writeInt(4)))
                    .read();
            assertEquals(
                    "#0 error VGPU_PROTOCOL_ERROR: MEMCPY_HTOD names a shared slot but the session's bulk bytes go"
                            + " in-band (frames on the connection)",
                    reply);
            assertEquals("closed", client.read());
        }
        assertFreedAndServingAgain();
    }

    /** A synchronous MEMCPY_HTOD of request {@code id} whose chunk is in the slot {@code trailer} names. */
    private static byte[] chunkInSlot(int id, ByteBuf trailer) {
        ByteBuf frame = Unpooled.buffer();
        try {
            new RequestEncoder()
                    .wrap(frame)
                    .memcpyHtoDChunkHeader(id, false, false, 0, WINDOW.base(), trailer.readableBytes());
            Frames.addFlags(frame, 0, Frames.FLAG_IN_SLOT);
            frame.writeBytes(trailer, trailer.readerIndex(), trailer.readableBytes());
            return ByteBufUtil.getBytes(frame);
        } finally {
            frame.release();
        }
    }

    private void assertFreedAndServingAgain() throws InterruptedException {
        worker.assertEndedUncleanAndFreed();
    }
}
