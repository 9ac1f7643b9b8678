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

/**
 * The slots stripes land chunks in: a landed chunk reaches the device from its slot; a stripe finding no free slot
 * reads nothing and keeps its chunk; a slot comes back once its device copy is done or its chunk was not copied; a
 * chunk larger than a slot, and any buffer not landed here, take the staging ring's way.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class LandingSlotsTest {
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
        try (LandingSlots slots = new LandingSlots(gpu, 4, SLOT_BYTES)) {
            for (int chunk = 0; chunk < 4; chunk++) {
                ByteBuf in = wire(SLOT_BYTES, chunk);
                byte[] expected = new byte[SLOT_BYTES];
                in.getBytes(0, expected);
                ByteBuf landed = slots.land(in, SLOT_BYTES);
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

    @Test
    void aStripeFindingNoFreeSlotReadsNothingUntilOneIsDoneWith() {
        try (LandingSlots slots = new LandingSlots(gpu, 2, SLOT_BYTES)) {
            ByteBuf in = wire(3 * SMALL, 1);
            ByteBuf first = slots.land(in, SMALL);
            ByteBuf second = slots.land(in, SMALL);
            assertNotNull(first);
            assertNotNull(second);
            assertNull(slots.land(in, SMALL), "both slots hold a chunk waiting for its frame");
            assertEquals(SMALL, in.readableBytes(), "the third chunk stays where it was");
            // the first chunk's request failed before its copy: its slot is free again, the second's is not
            slots.doneWith(first);
            ByteBuf elsewhere = Unpooled.directBuffer(8).writeZero(8);
            slots.doneWith(elsewhere);
            elsewhere.release();
            ByteBuf third = slots.land(in, SMALL);
            assertNotNull(third);
            ByteBuf fourth = wire(SMALL, 0);
            assertNull(slots.land(fourth, SMALL), "a buffer not landed here freed no slot");
            fourth.release();
            byte[] expected = new byte[SMALL];
            wire(3 * SMALL, 1).skipBytes(2 * SMALL).readBytes(expected);
            byte[] got = new byte[SMALL];
            third.getBytes(0, got);
            assertArrayEquals(expected, got, "the third chunk landed whole in the slot the first left");
            in.release();
        }
    }

    @Test
    void aSlotOnTheDeviceIsReusedOnlyOnceItsCopyIsDone() {
        int count = LandingSlots.ON_DEVICE_AT_MOST + 1;
        long device = gpu.memAlloc((long) count * SMALL);
        try (LandingSlots slots = new LandingSlots(gpu, count, SLOT_BYTES)) {
            ByteBuf in = wire((count + 1) * SMALL, 3);
            List<ByteBuf> landed = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                landed.add(slots.land(in, SMALL));
            }
            for (int i = 0; i < LandingSlots.ON_DEVICE_AT_MOST; i++) {
                assertTrue(slots.copyToDevice(landed.get(i), device + (long) i * SMALL, StreamHandle.DEFAULT));
            }
            assertNull(slots.land(in, SMALL), "every slot is on the device or holds a chunk");
            // one more on the device than may be: queuing it waits for the oldest copy and frees its slot
            assertTrue(slots.copyToDevice(
                    landed.get(count - 1), device + (long) (count - 1) * SMALL, StreamHandle.DEFAULT));
            assertNotNull(slots.land(in, SMALL), "the oldest slot came back once its copy was done");
            in.release();
        }
    }

    @Test
    void aChunkBelowTheLandedSizeStaysInTheSocketsBuffers() {
        try (LandingSlots slots = new LandingSlots(gpu, 2, 2 * SLOT_BYTES)) {
            ByteBuf in = wire(SMALL, 0);
            assertNull(slots.land(in, SMALL - 1));
            assertEquals(SMALL, in.readableBytes());
            assertNotNull(slots.land(in, SMALL));
            in.release();
        }
    }

    @Test
    void aChunkLargerThanASlotAndABufferNotLandedHereTakeTheStagingRingsWay() {
        long device = gpu.memAlloc(SLOT_BYTES);
        try (LandingSlots slots = new LandingSlots(gpu, 2, SLOT_BYTES)) {
            ByteBuf large = wire(SLOT_BYTES + 1, 0);
            assertNull(slots.land(large, SLOT_BYTES + 1));
            assertEquals(SLOT_BYTES + 1, large.readableBytes());
            large.release();
            ByteBuf elsewhere = Unpooled.directBuffer(16).writeZero(16);
            assertFalse(slots.copyToDevice(elsewhere, device, StreamHandle.DEFAULT));
            elsewhere.release();
        }
    }

    @Test
    void theLandingSettingIsOnOrOffAndAnythingElseIsRefusedByName() {
        String before = System.getProperty(LandingSlots.PROPERTY);
        try {
            System.clearProperty(LandingSlots.PROPERTY);
            assertTrue(LandingSlots.taken(), "on by default");
            System.setProperty(LandingSlots.PROPERTY, " OFF ");
            assertFalse(LandingSlots.taken());
            System.setProperty(LandingSlots.PROPERTY, "sometimes");
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, LandingSlots::taken);
            assertEquals("-Dvgpu.bulk.landing must be on or off, got 'sometimes'", refused.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty(LandingSlots.PROPERTY);
            } else {
                System.setProperty(LandingSlots.PROPERTY, before);
            }
        }
    }

    @Test
    void noChunkLandsOnceTheSlotsAreClosed() {
        LandingSlots slots = new LandingSlots(gpu, 2, SLOT_BYTES);
        slots.close();
        ByteBuf in = wire(SMALL, 0);
        assertNull(slots.land(in, SMALL));
        assertEquals(SMALL, in.readableBytes());
        in.release();
    }
}
