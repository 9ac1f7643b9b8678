package org.vgpu.runtime.remote.worker;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.RemoteTuning;

/**
 * Page-locked host memory of the worker's vGPU, in slots taken round-robin, through which bulk
 * copies move between the network and the device. A copy from or to page-locked memory is a
 * direct DMA that runs asynchronously, so the device copies one slot while the GPU thread fills
 * the next (host to device) or the event loop writes the previous one to the socket (device to
 * host); from Netty's pageable buffers the driver would stage every piece itself, synchronously.
 *
 * <p>A slot is free again once the device is done with it (its event) and, for device-to-host
 * data, once the socket has taken its bytes ({@link Slot#written}, which the event loop calls).
 * GPU thread only, apart from {@link Slot#written}.
 */
final class StagingRing implements AutoCloseable {
    /** A slot holds one copy chunk as the client sends them by default. */
    static final int SLOT_BYTES = RemoteTuning.current().chunkBytes();
    /** Enough slots for the device, the socket and the thread filling or emptying them to work at once. */
    static final int SLOTS = 4;

    /**
     * The slots a session needs whose device-to-host chunks go out on {@code stripes} connections: one in each
     * stripe's socket at once, and two for the device and the GPU thread, at least {@link #SLOTS}. A slot handed to a
     * stripe stays busy until its socket took the bytes, so fewer slots would leave stripes idle.
     */
    static int slotsFor(int stripes) {
        return Math.max(SLOTS, stripes + 2);
    }

    private final VirtualGpu gpu;
    private final Slot[] slots;
    private final Thread owner = Thread.currentThread();
    private int next;

    /**
     * Room in front of each slot's data for the header of the frame that carries it, so that a
     * device-to-host chunk goes to the socket as one buffer, with nothing allocated per chunk.
     */
    static final int HEADER_ROOM = 32;

    /** One piece of the ring. */
    final class Slot {
        private final MemorySegment memory;
        private final EventHandle deviceDone;
        private boolean deviceBusy;
        private volatile boolean inSocket;

        private Slot(MemorySegment memory, EventHandle deviceDone) {
            this.memory = memory;
            this.deviceDone = deviceDone;
        }

        /** The first {@code bytes} of the slot's data. */
        MemorySegment memory(long bytes) {
            return memory.asSlice(HEADER_ROOM, bytes);
        }

        /** The first {@code bytes} of the slot's data and the {@code headerBytes} right in front of them. */
        MemorySegment withHeader(int headerBytes, long bytes) {
            if (headerBytes > HEADER_ROOM) {
                throw new IllegalArgumentException(
                        "a header of " + headerBytes + " bytes exceeds the slot's room of " + HEADER_ROOM);
            }
            return memory.asSlice(HEADER_ROOM - headerBytes, headerBytes + bytes);
        }

        /** Marks the slot busy until the work queued on {@code stream} so far (its copy) is done. */
        void deviceCopyQueued(StreamHandle stream) {
            deviceBusy = true;
            gpu.eventRecord(deviceDone, stream);
        }

        /** Waits until the device is done with the slot; reports the failure of its copy. */
        void awaitDevice() {
            if (deviceBusy) {
                deviceBusy = false;
                gpu.eventSynchronize(deviceDone);
            }
        }

        /** The slot's memory is handed to the socket; {@link #written} frees it. */
        void sending() {
            inSocket = true;
        }

        /** The socket took the slot's bytes, or the write failed: the memory may be reused. Any thread. */
        void written() {
            inSocket = false;
            LockSupport.unpark(owner);
        }

        /** Waits until the socket is done with the slot's memory. */
        void awaitSocket() {
            while (inSocket) {
                LockSupport.parkNanos(this, 1_000_000);
            }
        }
    }

    /** Allocates {@link #SLOTS} slots on {@code gpu}; called on the GPU thread, the only one that uses the ring. */
    StagingRing(VirtualGpu gpu) {
        this(gpu, SLOTS);
    }

    /** Allocates {@code count} slots on {@code gpu}; called on the GPU thread, the only one that uses the ring. */
    StagingRing(VirtualGpu gpu, int count) {
        this.gpu = gpu;
        this.slots = new Slot[count];
        try {
            for (int i = 0; i < count; i++) {
                slots[i] = new Slot(gpu.memAllocHost(HEADER_ROOM + SLOT_BYTES), gpu.eventCreate());
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** The next slot, once the device and the socket are done with what it held. */
    Slot acquire() {
        Slot slot = slots[next];
        next = (next + 1) % slots.length;
        slot.awaitSocket();
        slot.awaitDevice();
        return slot;
    }

    /** Waits until the device is done with every slot: the copies queued so far are complete. */
    void awaitDevice() {
        for (Slot slot : slots) {
            slot.awaitDevice();
        }
    }

    /**
     * Frees the slots once nothing uses them any more. Failures of copies still in flight were
     * reported to their requests, or belong to a session that is ending, so they are not raised.
     */
    @Override
    public void close() {
        for (Slot slot : slots) {
            if (slot == null) {
                continue;
            }
            slot.awaitSocket();
            try {
                slot.awaitDevice();
            } catch (RuntimeException reportedBefore) {
                // see above
            }
            gpu.eventDestroy(slot.deviceDone);
            gpu.memFreeHost(slot.memory);
        }
    }
}
