package org.vgpu.runtime.remote.worker;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.Locale;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.transport.StripedStreams;

/**
 * Page-locked host memory of the worker's vGPU into which a striped session's stripes land chunks bound for the
 * device, each on its own event loop as the chunk's last byte arrives. The session's GPU thread then queues the
 * device's copy straight from the slot: the one user-space copy of a byte on its way to the device is made by the
 * stripes in parallel, not by the GPU thread one chunk after another (which held striped copies to 5-6 GB/s on the
 * H200 machines, the sockets idle meanwhile).
 *
 * <p>A slot goes free → filling (a stripe copies into it) → landed (the chunk waits for its frame) → on the device
 * (its copy queued, its event recorded) → free once the event completed. A chunk the GPU thread does not copy from its
 * slot (a scattered copy, a request that failed) frees the slot when it is {@link #doneWith done}. When no slot is
 * free a stripe keeps the chunk in its socket's buffers, and it goes through the staging ring as before: nothing
 * waits for a slot. A stripe holds at most {@link #roomPerStripe} bytes before it stops reading, and at most
 * {@value #ON_DEVICE_AT_MOST} slots stay on the device (the GPU thread waits for the oldest beyond), so a stripe
 * nearly always finds a slot free.
 *
 * <p>{@value #PROPERTY}{@code =off} on the worker leaves every chunk in its socket's buffers, as before the slots
 * (to compare the two); {@code on}, the default, lands them.
 *
 * <p>Threads: {@link #land} from any stripe's event loop; everything else on the GPU thread, which created the slots
 * and alone frees them: {@link #close} waits until no stripe is copying into one.
 */
final class LandingSlots implements StripedStreams.ChunkLander, AutoCloseable {
    static final String PROPERTY = "vgpu.bulk.landing";
    /**
     * The chunks a stripe holds, landed and waiting for their frames, before it stops reading its socket: one being
     * taken while the next waits. A stripe that ran further ahead would find no slot free and keep its chunks in the
     * socket's buffers after all.
     */
    static final int SLOTS_PER_STRIPE = 2;
    /** Slots whose device copy may still run: the GPU thread waits for the oldest beyond these, usually done by then. */
    static final int ON_DEVICE_AT_MOST = 2;
    /** Smaller chunks stay in the socket's buffers: copying them there costs about what landing them would. */
    static final int MIN_LANDED_BYTES = 64 << 10;

    private enum State {
        FREE,
        FILLING,
        LANDED,
        ON_DEVICE,
        /** Its device copy was queued but no event could be recorded after it: never reused. */
        RETIRED
    }

    private static final class Slot {
        final MemorySegment memory;
        final EventHandle deviceDone;
        /** Guarded by the {@link LandingSlots} instance. */
        State state = State.FREE;

        Slot(MemorySegment memory, EventHandle deviceDone) {
            this.memory = memory;
            this.deviceDone = deviceDone;
        }
    }

    private final VirtualGpu gpu;
    private final int slotBytes;
    private final Slot[] slots;
    /** Guarded by this. */
    private final ArrayDeque<Slot> free = new ArrayDeque<>();
    /** Slots whose device copy is queued, oldest first; the GPU thread's. */
    private final ArrayDeque<Slot> onDevice = new ArrayDeque<>();
    /** Stripes copying into a slot now; guarded by this. */
    private int filling;
    /** Guarded by this. */
    private boolean closed;

    /** {@code count} slots of {@code slotBytes} each on {@code gpu}; on the GPU thread. */
    LandingSlots(VirtualGpu gpu, int count, int slotBytes) {
        this.gpu = gpu;
        this.slotBytes = slotBytes;
        this.slots = new Slot[count];
        try {
            for (int i = 0; i < count; i++) {
                MemorySegment memory = gpu.memAllocHost(slotBytes);
                try {
                    slots[i] = new Slot(memory, gpu.eventCreate());
                } catch (RuntimeException e) {
                    gpu.memFreeHost(memory);
                    throw e;
                }
                free.add(slots[i]);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /**
     * Whether this worker's stripes land chunks ({@value #PROPERTY}).
     *
     * @throws IllegalArgumentException when the property is neither {@code on} nor {@code off}
     */
    static boolean taken() {
        String mode = System.getProperty(PROPERTY, "on").strip();
        return switch (mode.toLowerCase(Locale.ROOT)) {
            case "on" -> true;
            case "off" -> false;
            default -> throw new IllegalArgumentException("-D" + PROPERTY + " must be on or off, got '" + mode + "'");
        };
    }

    /**
     * The slots a session of {@code stripes} stripes lands its chunks in: each stripe's, those still on the device,
     * and two for a stripe that cut more than one chunk from one read before it paused.
     */
    static int slotsFor(int stripes) {
        return SLOTS_PER_STRIPE * stripes + ON_DEVICE_AT_MOST + 2;
    }

    @Override
    public int roomPerStripe() {
        return SLOTS_PER_STRIPE * slotBytes;
    }

    @Override
    public ByteBuf land(ByteBuf in, int length) {
        Slot slot;
        synchronized (this) {
            if (closed || length < Math.min(MIN_LANDED_BYTES, slotBytes) || length > slotBytes || free.isEmpty()) {
                return null;
            }
            slot = free.poll();
            slot.state = State.FILLING;
            filling++;
        }
        State after = State.FREE;
        try {
            in.readBytes(slot.memory.asSlice(0, length).asByteBuffer());
            after = State.LANDED;
        } finally {
            synchronized (this) {
                moveTo(slot, after);
                filling--;
                notifyAll();
            }
        }
        return Unpooled.wrappedBuffer(slot.memory.asSlice(0, length).asByteBuffer());
    }

    /**
     * Queues on {@code stream} the device's copy of {@code data} to {@code dst} straight from its slot, when
     * {@code data} is a chunk landed here; returns false, queuing nothing, for any other buffer.
     */
    boolean copyToDevice(ByteBuf data, long dst, StreamHandle stream) {
        Slot slot = landedSlotOf(data);
        if (slot == null) {
            return false;
        }
        int length = data.readableBytes();
        gpu.memcpyHtoDAsync(dst, slot.memory.asSlice(0, length), length, stream);
        // from here the device may read the slot: without an event to say when it is done, it is never reused
        moveTo(slot, State.RETIRED);
        gpu.eventRecord(slot.deviceDone, stream);
        moveTo(slot, State.ON_DEVICE);
        onDevice.add(slot);
        while (onDevice.size() > ON_DEVICE_AT_MOST) {
            reclaimOldest();
        }
        return true;
    }

    /** Frees the slot of {@code data} if it is a landed chunk whose device copy was never queued. GPU thread. */
    void doneWith(ByteBuf data) {
        Slot slot = landedSlotOf(data);
        if (slot != null) {
            moveTo(slot, State.FREE);
        }
    }

    /** Waits until the device is done with every slot's copy, freeing them; reports the first failure. */
    void awaitDevice() {
        RuntimeException first = null;
        while (!onDevice.isEmpty()) {
            try {
                reclaimOldest();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Waits for the oldest slot's device copy and frees the slot, even when the copy failed. */
    private void reclaimOldest() {
        Slot slot = onDevice.poll();
        try {
            gpu.eventSynchronize(slot.deviceDone);
        } finally {
            moveTo(slot, State.FREE);
        }
    }

    private synchronized void moveTo(Slot slot, State state) {
        slot.state = state;
        if (state == State.FREE) {
            free.add(slot);
        }
    }

    /** The slot holding {@code data}, landed and not yet queued, or null: compared by where the bytes lie. */
    private Slot landedSlotOf(ByteBuf data) {
        if (!data.isDirect() || data.nioBufferCount() != 1) {
            return null;
        }
        long address = MemorySegment.ofBuffer(data.nioBuffer()).address();
        synchronized (this) {
            return slotAt(address);
        }
    }

    private Slot slotAt(long address) {
        for (Slot slot : slots) {
            if (slot != null && slot.state == State.LANDED && slot.memory.address() == address) {
                return slot;
            }
        }
        return null;
    }

    /**
     * Frees the slots once no stripe copies into one and the device is done with them. A chunk still landed in a slot
     * belongs to a session that is ending: its frame will not be served, so its memory is not read again.
     */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            boolean interrupted = false;
            while (filling > 0) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            awaitDevice();
        } catch (RuntimeException reportedBefore) {
            // the copies' failures went to their requests, or belong to the session that is ending
        }
        for (Slot slot : slots) {
            if (slot != null) {
                gpu.eventDestroy(slot.deviceDone);
                gpu.memFreeHost(slot.memory);
            }
        }
    }
}
