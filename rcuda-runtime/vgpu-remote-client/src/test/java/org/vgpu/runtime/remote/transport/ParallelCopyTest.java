package org.vgpu.runtime.remote.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A large chunk, in the uneven buffers a socket fills, copied by several threads lands exactly where one would. */
class ParallelCopyTest {
    private final ParallelCopy threeThreads = new ParallelCopy(3, "test-copy");

    @AfterEach
    void close() {
        threeThreads.close();
    }

    /** Buffers of the given sizes back to back, byte i of the whole holding {@code i * 31 + 7}. */
    private static CompositeByteBuf chunk(int... sizes) {
        CompositeByteBuf chunk = Unpooled.compositeBuffer(sizes.length);
        int at = 0;
        for (int size : sizes) {
            ByteBuf piece = Unpooled.directBuffer(size).writeBytes(expected(at, size));
            chunk.addComponent(true, piece);
            at += size;
        }
        return chunk;
    }

    private static byte[] expected(int from, int length) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) ((from + i) * 31 + 7);
        }
        return bytes;
    }

    @Test
    void aLargeChunkInUnevenBuffersLandsWholeAtItsOffset() {
        CompositeByteBuf chunk = chunk(300 << 10, 7, (1 << 20) + 13, 5, 200 << 10);
        int length = chunk.readableBytes();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment destination = arena.allocate(length + 100L);
            destination.fill((byte) 0x55);
            threeThreads.copy(chunk, 0, length, destination, 50);
            assertArrayEquals(
                    expected(0, length), destination.asSlice(50, length).toArray(ValueLayout.JAVA_BYTE));
            byte[] untouched = new byte[50];
            Arrays.fill(untouched, (byte) 0x55);
            assertArrayEquals(untouched, destination.asSlice(0, 50).toArray(ValueLayout.JAVA_BYTE), "before");
            assertArrayEquals(untouched, destination.asSlice(50L + length, 50).toArray(ValueLayout.JAVA_BYTE), "after");
        } finally {
            chunk.release();
        }
    }

    @Test
    void aPartOfTheChunkFromAnIndexIsCopiedAndItsIndicesStay() {
        CompositeByteBuf chunk = chunk(700 << 10, 900 << 10);
        int from = 123_457;
        int length = (1 << 20) + 3;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment destination = arena.allocate(length);
            threeThreads.copy(chunk, from, length, destination, 0);
            assertArrayEquals(expected(from, length), destination.toArray(ValueLayout.JAVA_BYTE));
            assertEquals(0, chunk.readerIndex());
            assertEquals((700 << 10) + (900 << 10), chunk.writerIndex());
        } finally {
            chunk.release();
        }
    }

    @Test
    void memoryOfAConfinedArenaAndHeapArraysLandToo() {
        CompositeByteBuf chunk = chunk(1 << 20, 1 << 20);
        int length = chunk.readableBytes();
        try (Arena confined = Arena.ofConfined()) {
            MemorySegment owned = confined.allocate(length);
            assertFalse(ParallelCopy.isShared(owned), "only its owner thread may touch it, so the caller copies alone");
            threeThreads.copy(chunk, 0, length, owned, 0);
            assertArrayEquals(expected(0, length), owned.toArray(ValueLayout.JAVA_BYTE));

            byte[] array = new byte[length];
            threeThreads.copy(chunk, 0, length, MemorySegment.ofArray(array), 0);
            assertArrayEquals(expected(0, length), array);
        } finally {
            chunk.release();
        }
    }

    @Test
    void memoryIsCopiedToMemoryWholeAndAConfinedSourceByTheCallerAlone() {
        int length = (2 << 20) + 13;
        try (Arena shared = Arena.ofShared();
                Arena confined = Arena.ofConfined()) {
            MemorySegment source = shared.allocate(length + 7L);
            MemorySegment.copy(expected(0, length), 0, source, ValueLayout.JAVA_BYTE, 7, length);
            MemorySegment destination = shared.allocate(length + 100L);
            destination.fill((byte) 0x55);
            threeThreads.copy(source, 7, destination, 50, length);
            assertArrayEquals(
                    expected(0, length), destination.asSlice(50, length).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(0x55, destination.get(ValueLayout.JAVA_BYTE, 49));
            assertEquals(0x55, destination.get(ValueLayout.JAVA_BYTE, 50L + length));

            // a helper touching the owner's memory would fail with WrongThreadException
            MemorySegment owned = confined.allocate(length);
            MemorySegment.copy(source, 7, owned, 0, length);
            MemorySegment again = shared.allocate(length);
            threeThreads.copy(owned, 0, again, 0, length);
            assertArrayEquals(expected(0, length), again.toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void aDestinationTooSmallOrFreedFailsTheCopyAndNoHelperIsLeftBehind() {
        CompositeByteBuf chunk = chunk(2 << 20);
        try {
            MemorySegment small;
            try (Arena arena = Arena.ofShared()) {
                small = arena.allocate(1 << 20);
                MemorySegment tooSmall = small;
                assertThrows(
                        IndexOutOfBoundsException.class,
                        () -> threeThreads.copy(chunk, 0, chunk.readableBytes(), tooSmall, 0));
            }
            MemorySegment freed = small;
            assertThrows(IllegalStateException.class, () -> threeThreads.copy(chunk, 0, 1 << 20, freed, 0));
            try (Arena arena = Arena.ofShared()) {
                MemorySegment destination = arena.allocate(chunk.readableBytes());
                threeThreads.copy(chunk, 0, chunk.readableBytes(), destination, 0);
                assertArrayEquals(
                        expected(0, chunk.readableBytes()),
                        destination.toArray(ValueLayout.JAVA_BYTE),
                        "the copier goes on after a failed copy");
            }
        } finally {
            chunk.release();
        }
    }

    @Test
    void oneThreadIsTheCallerAlone() {
        try (ParallelCopy alone = new ParallelCopy(1, "unused")) {
            CompositeByteBuf chunk = chunk(1 << 20, 1 << 20);
            try (Arena arena = Arena.ofShared()) {
                MemorySegment destination = arena.allocate(chunk.readableBytes());
                alone.copy(chunk, 0, chunk.readableBytes(), destination, 0);
                assertArrayEquals(expected(0, chunk.readableBytes()), destination.toArray(ValueLayout.JAVA_BYTE));
            } finally {
                chunk.release();
            }
        }
        assertThrows(IllegalArgumentException.class, () -> new ParallelCopy(0, "none"));
    }
}
