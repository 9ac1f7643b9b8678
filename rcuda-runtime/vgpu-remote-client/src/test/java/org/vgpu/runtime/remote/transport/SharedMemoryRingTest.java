package org.vgpu.runtime.remote.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The shared region as both ends see it: created owner-only and fresh, opened only with its nonce, bytes through
 * its slots both ways, a sender held back while every slot is taken, and trailers that name no filled slot
 * refused as protocol errors without touching memory outside the slots.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SharedMemoryRingTest {
    private static final int SLOTS = 4;
    private static final int SLOT_BYTES = 64 << 10;
    /** What the chunks are said to be: shared slots do not carry it. */
    private static final ChunkLabel LABEL = new ChunkLabel(1, 0);

    @TempDir
    Path directory;

    private SharedMemoryRing worker;
    private SharedMemoryRing client;

    @BeforeEach
    void map() throws IOException {
        worker = SharedMemoryRing.create(directory, SLOTS, SLOT_BYTES);
        client = SharedMemoryRing.open(worker.file(), worker.nonce());
    }

    @AfterEach
    void close() {
        worker.close();
        client.close();
    }

    @Test
    void theRegionIsAFreshFileOfItsOwnerAlone() throws IOException {
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(worker.file())));
        assertEquals(SharedMemoryRing.regionBytes(SLOTS, SLOT_BYTES), Files.size(worker.file()));
        assertEquals(SharedMemoryRing.regionBytes(SLOTS, SLOT_BYTES), worker.boundBytes());
        assertTrue(
                worker.file().getFileName().toString().matches("vgpu-bulk-[0-9a-f]{32}"),
                worker.file().toString());
        worker.unlink();
        assertFalse(Files.exists(worker.file()), "gone from the filesystem; both mappings stay");
        bytesTravel(client, worker, 1000);
    }

    @Test
    void theClientAcknowledgesWhatTheWorkerSees() {
        assertFalse(worker.acknowledged());
        client.acknowledge();
        assertTrue(worker.acknowledged());
    }

    @Test
    void aRegionIsOpenedOnlyWithItsNonceAndOnlyAsAnOwnerOnlyRegularFile() throws IOException {
        IOException wrongNonce =
                assertThrows(IOException.class, () -> SharedMemoryRing.open(worker.file(), worker.nonce() + 1));
        assertTrue(wrongNonce.getMessage().contains("another nonce"), wrongNonce.getMessage());

        Path link = Files.createSymbolicLink(directory.resolve("link"), worker.file());
        IOException linked = assertThrows(IOException.class, () -> SharedMemoryRing.open(link, worker.nonce()));
        assertTrue(linked.getMessage().contains("not a regular file"), linked.getMessage());

        Path readable = Files.copy(worker.file(), directory.resolve("readable"));
        Files.setPosixFilePermissions(readable, PosixFilePermissions.fromString("rw-r--r--"));
        IOException open = assertThrows(IOException.class, () -> SharedMemoryRing.open(readable, worker.nonce()));
        assertTrue(open.getMessage().contains("has mode rw-r--r--, not rw-------"), open.getMessage());

        Path small = Files.write(directory.resolve("small"), new byte[100]);
        Files.setPosixFilePermissions(small, PosixFilePermissions.fromString("rw-------"));
        IOException tooSmall = assertThrows(IOException.class, () -> SharedMemoryRing.open(small, 0));
        assertTrue(tooSmall.getMessage().contains("holds 100 bytes, not 4096 to "), tooSmall.getMessage());
    }

    @Test
    void theGeometryIsBounded() {
        assertThrows(
                IllegalArgumentException.class,
                () -> SharedMemoryRing.create(directory, SharedMemoryRing.MAX_SLOTS + 1, SLOT_BYTES));
        assertThrows(
                IllegalArgumentException.class,
                () -> SharedMemoryRing.create(directory, SLOTS, SharedMemoryRing.MAX_SLOT_BYTES + 4096));
        assertThrows(IllegalArgumentException.class, () -> SharedMemoryRing.create(directory, SLOTS, 5000));
        assertThrows(
                IllegalArgumentException.class, () -> client.send(MemorySegment.ofArray(new byte[0]), 0, -1, LABEL));
        assertThrows(
                IllegalArgumentException.class,
                () -> client.send(MemorySegment.ofArray(new byte[SLOT_BYTES + 1]), 0, SLOT_BYTES + 1, LABEL));
    }

    @Test
    void bytesTravelBothWaysAndTheirSlotsAreReused() {
        for (int round = 0; round < 3 * SLOTS; round++) {
            bytesTravel(client, worker, 1 + round * 4001);
            bytesTravel(worker, client, SLOT_BYTES - round);
        }
    }

    @Test
    void aSenderWaitsWhileEverySlotIsTakenAndGoesOnWhenOneIsReleased() throws Exception {
        ByteBuf[] trailers = new ByteBuf[SLOTS];
        for (int slot = 0; slot < SLOTS; slot++) {
            trailers[slot] = client.send(filled(100, slot), 0, 100, LABEL);
        }
        CompletableFuture<ByteBuf> waiting =
                CompletableFuture.supplyAsync(() -> client.send(filled(100, 9), 0, 100, LABEL));
        assertThrows(TimeoutException.class, () -> waiting.get(200, TimeUnit.MILLISECONDS));
        ByteBuf first = worker.receive(trailers[0]);
        assertThrows(
                TimeoutException.class,
                () -> waiting.get(100, TimeUnit.MILLISECONDS),
                "taken is not free: the receiver still reads the slot");
        first.release();
        ByteBuf fifth = waiting.get(5, TimeUnit.SECONDS);
        for (int slot = 1; slot < SLOTS; slot++) {
            worker.receive(trailers[slot]).release();
        }
        ByteBuf chunk = worker.receive(fifth);
        assertArrayEquals(expected(100, 9), ByteBufUtil.getBytes(chunk));
        chunk.release();
        for (ByteBuf trailer : trailers) {
            trailer.release();
        }
        fifth.release();
    }

    @Test
    void closingStopsASenderThatWaitsForASlot() throws Exception {
        for (int slot = 0; slot < SLOTS; slot++) {
            client.send(filled(8, slot), 0, 8, LABEL).release();
        }
        CompletableFuture<ByteBuf> waiting =
                CompletableFuture.supplyAsync(() -> client.send(filled(8, 0), 0, 8, LABEL));
        assertThrows(TimeoutException.class, () -> waiting.get(100, TimeUnit.MILLISECONDS));
        client.close();
        Exception stopped = assertThrows(Exception.class, () -> waiting.get(5, TimeUnit.SECONDS));
        assertTrue(stopped.getCause() instanceof IllegalStateException, String.valueOf(stopped.getCause()));
    }

    @ParameterizedTest(name = "slot {0}, length {1}")
    @CsvSource({
        "-1, 8, 'shared slot -1 is outside [0, 4)'",
        "4, 8, 'shared slot 4 is outside [0, 4)'",
        "2147483647, 8, 'shared slot 2147483647 is outside [0, 4)'",
        "0, -1, a chunk of -1 bytes in a shared slot of 65536 bytes",
        "0, 65537, a chunk of 65537 bytes in a shared slot of 65536 bytes",
        "1, 8, shared slot 1 was named by a frame but not filled",
    })
    void aTrailerNamingNoFilledSlotIsAProtocolError(int slot, int length, String detail) {
        ByteBuf trailer = Unpooled.buffer(8).writeInt(slot).writeInt(length);
        VgpuException e = assertThrows(VgpuException.class, () -> worker.receive(trailer));
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, e.code());
        assertEquals(detail, e.detail());
    }

    @Test
    void aSlotIsReceivedOnceAndATrailerOfAnotherSizeIsRefused() {
        ByteBuf trailer = client.send(filled(16, 3), 0, 16, LABEL);
        ByteBuf chunk = worker.receive(trailer.duplicate());
        VgpuException twice = assertThrows(VgpuException.class, () -> worker.receive(trailer.duplicate()));
        assertEquals("shared slot 0 was named by a frame but not filled", twice.detail());
        chunk.release();
        trailer.release();
        VgpuException shortTrailer = assertThrows(
                VgpuException.class, () -> worker.receive(Unpooled.buffer(4).writeInt(0)));
        assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, shortTrailer.code());
    }

    @Test
    void theInBandPathCarriesTheBytesThemselves() {
        MemorySegment bytes = filled(32, 5);
        ByteBuf trailer = InBandFrames.INSTANCE.send(bytes, 0, 32, LABEL);
        ByteBuf chunk = InBandFrames.INSTANCE.receive(trailer);
        assertArrayEquals(expected(32, 5), ByteBufUtil.getBytes(chunk));
        assertEquals(32, InBandFrames.INSTANCE.trailerBytes(32));
        assertEquals(0, InBandFrames.INSTANCE.frameFlags());
        chunk.release();
        trailer.release();
    }

    private static void bytesTravel(SharedMemoryRing from, SharedMemoryRing to, int length) {
        ByteBuf trailer = from.send(filled(length + 10, length), 10, length, LABEL);
        ByteBuf chunk = to.receive(trailer);
        try {
            byte[] all = expected(length + 10, length);
            byte[] sent = new byte[length];
            System.arraycopy(all, 10, sent, 0, length);
            assertArrayEquals(sent, ByteBufUtil.getBytes(chunk));
        } finally {
            chunk.release();
            trailer.release();
        }
    }

    private static MemorySegment filled(int length, int seed) {
        MemorySegment segment = Arena.ofAuto().allocate(Math.max(1, length));
        segment.copyFrom(MemorySegment.ofArray(expected(length, seed)));
        return segment;
    }

    private static byte[] expected(int length, int seed) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) (i * 31 + seed);
        }
        return bytes;
    }
}
