package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.transport.ChunkLabel;
import org.vgpu.runtime.remote.transport.StripedStreams;

/**
 * The rooms a stripe reads an expected copy's chunks into are the caller's memory at each chunk's offset, nothing
 * outside the copy is ever handed out, and a copy is forgotten only once no stripe reads into its memory.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class StraightDestinationsTest {
    private final StraightDestinations destinations = new StraightDestinations();
    private final Arena arena = Arena.ofShared();
    /** The caller's memory of the copies expected here. */
    private final MemorySegment memory = arena.allocate(1000);

    @AfterEach
    void free() {
        arena.close();
    }

    /** Expects request {@code requestId}'s copy of 1000 bytes into {@link #memory}; returns the copy. */
    private PendingCopyToHost expected(int requestId) {
        PendingCopyToHost copy = new PendingCopyToHost(memory, 1000);
        destinations.expect(requestId, copy, memory);
        return copy;
    }

    @Test
    void anExpectedCopysChunkIsReadIntoTheCallersMemoryAtItsOffset() {
        expected(4);
        assertTrue(destinations.lands(new ChunkLabel(4, 600), 400));
        assertFalse(destinations.lands(new ChunkLabel(5, 0), 400), "another request's chunks are copied");
        assertFalse(destinations.lands(new ChunkLabel(4, 0), 0), "an empty chunk has nothing to read");

        StripedStreams.Room room = destinations.reserve(2, new ChunkLabel(4, 600), 400, () -> {});
        assertEquals(memory.address() + 600, room.memory().address());
        assertEquals(400, room.memory().byteSize());
        room.memory().fill((byte) 9);
        ByteBuf chunk = room.filled();
        assertEquals(400, chunk.readableBytes());
        assertEquals(memory.address() + 600, chunk.memoryAddress());
        assertTrue(ChunkLanding.alreadyThere(memory, 600, chunk), "the landing copies nothing");
        chunk.release();
        assertEquals(1, destinations.straightChunks());

        destinations.forget(4);
        assertFalse(destinations.lands(new ChunkLabel(4, 600), 400), "a forgotten copy's chunks are copied");
    }

    @Test
    void aChunkLabelledOutsideItsCopyIsTheWorkersProtocolError() {
        expected(4);
        for (ChunkLabel outside : new ChunkLabel[] {new ChunkLabel(4, 601), new ChunkLabel(4, Long.MAX_VALUE)}) {
            VgpuException refused =
                    assertThrows(VgpuException.class, () -> destinations.reserve(0, outside, 400, () -> {}));
            assertEquals(ErrorCode.VGPU_PROTOCOL_ERROR, refused.code());
            assertEquals(
                    "stripe 0 carries 400 bytes at offset " + outside.offset()
                            + " of request 4, whose copy is 1000 bytes",
                    refused.detail());
        }
        assertEquals(0, destinations.straightChunks());
    }

    @Test
    void aCopyIsForgottenOnlyOnceNoStripeReadsIntoItsMemory() throws Exception {
        expected(4);
        StripedStreams.Room filling = destinations.reserve(0, new ChunkLabel(4, 0), 500, () -> {});
        StripedStreams.Room abandoned = destinations.reserve(1, new ChunkLabel(4, 500), 500, () -> {});
        CompletableFuture<Void> forgetting = CompletableFuture.runAsync(() -> destinations.forget(4));
        abandoned.abandon();
        Thread.sleep(100);
        assertFalse(forgetting.isDone(), "stripe 0 still reads into the copy's memory");
        filling.filled().release();
        forgetting.get(10, TimeUnit.SECONDS);
    }

    @Test
    void onlyNativeMemoryIsReadStraightIn() {
        MemorySegment heap = MemorySegment.ofArray(new byte[8]);
        assertThrows(
                IllegalArgumentException.class, () -> destinations.expect(1, new PendingCopyToHost(heap, 8), heap));
    }

    @Test
    void aCopyThatIsDoneHasNoMoreChunksReadInAndIsForgottenByTheNextOne() {
        PendingCopyToHost copy = expected(4);
        copy.fail(new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "failed"));
        assertFalse(destinations.lands(new ChunkLabel(4, 0), 100), "a stray chunk after its copy is copied");
        expected(5);
        assertThrows(
                IllegalArgumentException.class,
                () -> destinations.reserve(0, new ChunkLabel(4, 0), 100, () -> {}),
                "forgotten");
    }

    @Test
    void onceStoppedNothingIsReadInAndTheCallerWaitsForTheRoomsBeingFilled() throws Exception {
        expected(4);
        StripedStreams.Room filling = destinations.reserve(0, new ChunkLabel(4, 0), 500, () -> {});
        destinations.stopExpecting();
        assertFalse(destinations.lands(new ChunkLabel(4, 500), 500));
        expected(6);
        assertFalse(destinations.lands(new ChunkLabel(6, 0), 500), "a lost session expects nothing more");
        CompletableFuture<Void> settling = CompletableFuture.runAsync(destinations::awaitQuiet);
        Thread.sleep(100);
        assertFalse(settling.isDone(), "stripe 0 still reads into a caller's memory");
        filling.abandon();
        settling.get(10, TimeUnit.SECONDS);
    }
}
