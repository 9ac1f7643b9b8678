package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.transport.ChunkLabel;
import org.vgpu.runtime.remote.transport.StripedStreams;

/**
 * The slots stripes land chunks in: a landed chunk reaches the device from its slot; a stripe whose slots are all
 * taken reads nothing and is told once one is free, while other stripes land in their own; a slot comes back once its
 * device copy is done or its chunk was not copied; chunks too small or too large, and any buffer not landed here,
 * take the staging ring's way.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class LandingSlotsTest {
    /** What the chunks are said to be: a worker's slots land any chunk bound for the device. */
    private static final ChunkLabel LABEL = new ChunkLabel(3, 0);

    private static final int SLOT_BYTES = LandingSlots.MIN_LANDED_BYTES;
    private static final int SMALL = LandingSlots.MIN_LANDED_BYTES;

    private final VirtualGpu gpu = new EmulatedBackend(1, 1L << 30, TestKernels.twins()).open(0, VaWindow.forVgpu(0));

    @AfterEach
    void closeGpu() {
        gpu.close();
    }

    private static ByteBuf wire(int length, int seed) {
        ByteBuf wire = Unpooled.buffer(length);
        for (int i = 0; i < length; i++) {
            wire.writeByte(seed + i * 7);
        }
        return wire;
    }

    private byte[] deviceBytes(long device, int length) {
        byte[] back = new byte[length];
        gpu.memcpyDtoH(MemorySegment.ofArray(back), device, length);
        return back;
    }

    @Test
    void landedChunksReachTheDeviceFromTheirSlots() {
        long device = gpu.memAlloc(4L * SLOT_BYTES);
        try (LandingSlots slots = new LandingSlots(gpu, 1, SLOT_BYTES)) {
            for (int chunk = 0; chunk < 4; chunk++) {
                ByteBuf in = wire(SLOT_BYTES, chunk);
                byte[] expected = new byte[SLOT_BYTES];
                in.getBytes(0, expected);
                ByteBuf landed = slots.land(0, LABEL, in, SLOT_BYTES, LandingSlotsTest::notCalled);
                assertNotNull(landed, "a free slot takes chunk " + chunk);
                assertFalse(in.isReadable(), "the chunk's bytes were read off the socket's buffers");
                assertTrue(slots.copyToDevice(landed, device + (long) chunk * SLOT_BYTES, StreamHandle.DEFAULT));
                slots.doneWith(landed);
                landed.release();
                in.release();
                slots.awaitDevice();
                assertArrayEquals(expected, deviceBytes(device + (long) chunk * SLOT_BYTES, SLOT_BYTES));
            }
        }
    }

    /** Passed by a stripe that finds a slot: it is never told of one. */
    private static void notCalled() {
        throw new AssertionError("a stripe that found a slot is not told of one");
    }

    @Test
    void aStripeWhoseSlotsAreAllTakenWaitsAndIsToldOnceOneIsFreeWhileOthersLandOn() {
        try (LandingSlots slots = new LandingSlots(gpu, 2, SLOT_BYTES)) {
            int perStripe = LandingSlots.SLOTS_PER_STRIPE;
            ByteBuf in = wire((perStripe + 2) * SMALL, 1);
            List<ByteBuf> landed = new ArrayList<>();
            for (int i = 0; i < perStripe; i++) {
                landed.add(slots.land(0, LABEL, in, SMALL, LandingSlotsTest::notCalled));
            }
            AtomicInteger told = new AtomicInteger();
            assertNull(slots.land(0, LABEL, in, SMALL, told::incrementAndGet), "stripe 0's slots all hold a chunk");
            assertEquals(2 * SMALL, in.readableBytes(), "its next chunk stays where it was");
            ByteBuf other = wire(SMALL, 9);
            assertNotNull(
                    slots.land(1, LABEL, other, SMALL, LandingSlotsTest::notCalled),
                    "stripe 1 lands in slots of its own");
            other.release();
            // a buffer not landed here frees nothing
            ByteBuf elsewhere = Unpooled.directBuffer(8).writeZero(8);
            slots.doneWith(elsewhere);
            elsewhere.release();
            assertEquals(0, told.get());
            // the first chunk's request failed before its copy: its slot is free again, and stripe 0 hears of it once
            slots.doneWith(landed.getFirst());
            assertEquals(1, told.get());
            ByteBuf next = slots.land(0, LABEL, in, SMALL, LandingSlotsTest::notCalled);
            assertNotNull(next);
            byte[] expected = new byte[SMALL];
            ByteBuf again = wire((perStripe + 2) * SMALL, 1);
            again.skipBytes(perStripe * SMALL).readBytes(expected);
            again.release();
            byte[] got = new byte[SMALL];
            next.getBytes(0, got);
            assertArrayEquals(expected, got, "the waiting chunk landed whole in the slot the first left");
            in.release();
        }
    }

    @Test
    void aSlotOnTheDeviceIsFreedOnceItsCopyIsDoneWhenTheNextIsQueued() {
        int perStripe = LandingSlots.SLOTS_PER_STRIPE;
        long device = gpu.memAlloc((long) perStripe * SMALL);
        try (LandingSlots slots = new LandingSlots(gpu, 1, SLOT_BYTES)) {
            ByteBuf in = wire((perStripe + 1) * SMALL, 3);
            List<ByteBuf> landed = new ArrayList<>();
            for (int i = 0; i < perStripe; i++) {
                landed.add(slots.land(0, LABEL, in, SMALL, LandingSlotsTest::notCalled));
            }
            for (int i = 0; i < LandingSlots.ON_DEVICE_AT_MOST; i++) {
                assertTrue(slots.copyToDevice(landed.get(i), device + (long) i * SMALL, StreamHandle.DEFAULT));
            }
            AtomicInteger told = new AtomicInteger();
            assertNull(
                    slots.land(0, LABEL, in, SMALL, told::incrementAndGet),
                    "every slot is on the device or holds a chunk");
            // one more on the device than may be: queuing it waits for the oldest copy and frees its slot
            assertTrue(slots.copyToDevice(
                    landed.get(perStripe - 1), device + (long) (perStripe - 1) * SMALL, StreamHandle.DEFAULT));
            assertEquals(1, told.get(), "the waiting stripe heard of the slot");
            assertNotNull(slots.land(0, LABEL, in, SMALL, LandingSlotsTest::notCalled));
            in.release();
        }
    }

    @Test
    void chunksBelowTheLandedSizeOrLargerThanASlotAreNotLandedAndOtherBuffersNotCopiedFrom() {
        long device = gpu.memAlloc(SLOT_BYTES);
        try (LandingSlots slots = new LandingSlots(gpu, 1, 2 * SLOT_BYTES)) {
            assertFalse(slots.lands(LABEL, SMALL - 1));
            assertTrue(slots.lands(LABEL, SMALL));
            assertTrue(slots.lands(LABEL, 2 * SLOT_BYTES));
            assertFalse(slots.lands(LABEL, 2 * SLOT_BYTES + 1));
            ByteBuf in = wire(SMALL, 0);
            assertThrows(
                    IllegalArgumentException.class,
                    () -> slots.land(0, LABEL, in, SMALL - 1, LandingSlotsTest::notCalled));
            assertEquals(SMALL, in.readableBytes());
            in.release();
            ByteBuf elsewhere = Unpooled.directBuffer(16).writeZero(16);
            assertFalse(slots.copyToDevice(elsewhere, device, StreamHandle.DEFAULT));
            elsewhere.release();
        }
    }

    @Test
    void aRoomFilledInPlaceReachesTheDeviceAndOneGivenBackUnfilledFreesItsSlot() {
        long device = gpu.memAlloc(SLOT_BYTES);
        try (LandingSlots slots = new LandingSlots(gpu, 1, SLOT_BYTES)) {
            List<StripedStreams.Room> rooms = new ArrayList<>();
            for (int i = 0; i < LandingSlots.SLOTS_PER_STRIPE; i++) {
                rooms.add(slots.reserve(0, LABEL, SMALL, LandingSlotsTest::notCalled));
            }
            AtomicInteger told = new AtomicInteger();
            assertNull(slots.reserve(0, LABEL, SMALL, told::incrementAndGet), "every slot of stripe 0 is being filled");

            // a stripe's socket wrote the bytes into the room itself
            StripedStreams.Room first = rooms.getFirst();
            ByteBuf bytes = wire(SMALL, 5);
            byte[] expected = new byte[SMALL];
            bytes.getBytes(0, expected);
            bytes.readBytes(first.memory().asByteBuffer());
            bytes.release();
            ByteBuf landed = first.filled();
            assertTrue(slots.copyToDevice(landed, device, StreamHandle.DEFAULT));
            landed.release();
            slots.awaitDevice();
            assertArrayEquals(expected, deviceBytes(device, SMALL));
            assertEquals(1, told.get(), "the slot the device was done with let the stripe go on");

            rooms.get(1).abandon();
            StripedStreams.Room again = slots.reserve(0, LABEL, SMALL, LandingSlotsTest::notCalled);
            StripedStreams.Room another = slots.reserve(0, LABEL, SMALL, LandingSlotsTest::notCalled);
            assertNotNull(again);
            assertNotNull(another, "the slot of the room given back is free again too");
            assertThrows(IllegalStateException.class, () -> rooms.get(1).abandon(), "a room is given back once");
            for (StripedStreams.Room room : List.of(again, another, rooms.get(2))) {
                room.abandon();
            }
        }
    }

    @Test
    void noChunkLandsOnceTheSlotsAreClosed() {
        LandingSlots slots = new LandingSlots(gpu, 2, SLOT_BYTES);
        slots.close();
        ByteBuf in = wire(SMALL, 0);
        assertNull(slots.land(0, LABEL, in, SMALL, LandingSlotsTest::notCalled));
        assertEquals(SMALL, in.readableBytes());
        in.release();
    }
}
