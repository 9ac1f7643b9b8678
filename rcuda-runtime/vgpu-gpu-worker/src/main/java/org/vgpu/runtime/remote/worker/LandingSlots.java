package org.vgpu.runtime.remote.worker;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.transport.ChunkLabel;
import org.vgpu.runtime.remote.transport.StripedStreams;

/**
 * Page-locked host memory of the worker's vGPU into which a striped session's stripes land chunks bound for the
 * device, each on its own event loop: a plain TCP stripe reads a chunk's bytes from its socket straight into a slot
 * ({@link org.vgpu.runtime.remote.transport.ReadTargets}), so the kernel's copy is their only one; otherwise (TLS, the
 * first chunk after the stripe joined) the stripe copies the chunk in as its last byte arrives. The session's GPU
 * thread then queues the device's copy straight from the slot, rather than copying each chunk itself one after
 * another (which held striped copies to 5-6 GB/s on the H200 machines, the sockets idle meanwhile).
 *
 * <p>Each stripe has {@value #SLOTS_PER_STRIPE} slots of its own. A slot goes free → filling (its stripe reads or
 * copies into it, from the chunk's header on) → landed (the chunk waits for its frame) → on the device (its copy
 * queued, its event recorded) → free once the event completed. A chunk the GPU thread does not copy from its slot (a
 * scattered copy, a request that failed) frees the slot when it is {@link #doneWith done}. A stripe whose slots are all
 * taken stops reading until one is free again. That cannot stall the session: the chunk the GPU thread waits for is the
 * oldest of its stripe, so none of that stripe's slots holds a landed chunk, and at most {@value #ON_DEVICE_AT_MOST}
 * are on the device (the GPU thread waits for the oldest beyond that as it queues the next), one fewer than a stripe
 * has. Chunks smaller than {@value #MIN_LANDED_BYTES} bytes, or larger than a slot, stay in the socket's buffers and go
 * through the staging ring.
 *
 * <p>{@code -Dvgpu.bulk.landing=false} on the worker leaves every chunk in its socket's buffers, as before the slots
 * (to compare the two; {@link org.vgpu.runtime.remote.RemoteTuning#landStripedChunks}).
 *
 * <p>Threads: {@link #reserve} and its rooms from the stripes' event loops; everything else on the GPU thread, which
 * created the slots and alone frees them: {@link #close} waits until no stripe is filling one.
 */
final class LandingSlots implements StripedStreams.ChunkLander, AutoCloseable {
    /** Slots whose device copy may still run: the GPU thread waits for the oldest beyond these, usually done by then. */
    static final int ON_DEVICE_AT_MOST = 2;
    /** Slots per stripe: one more than may be on the device, so that a stripe always gets one back (see above). */
    static final int SLOTS_PER_STRIPE = ON_DEVICE_AT_MOST + 1;
    /** Smaller chunks stay in the socket's buffers: copying them there costs about what landing them would. */
    static final int MIN_LANDED_BYTES = 64 << 10;
    /** How long {@link #close} waits for the stripes to give back the slots they are filling. */
    static final long CLOSE_PATIENCE_MILLIS = 10_000;

    private enum State {
        FREE,
        FILLING,
        LANDED,
        ON_DEVICE,
        /** Its device copy was queued but no event could be recorded after it: never reused (the vGPU is broken). */
        RETIRED
    }

    private static final class Slot {
        final int stripe;
        final MemorySegment memory;
        final EventHandle deviceDone;
        /** Guarded by the {@link LandingSlots} instance. */
        State state = State.FREE;

        Slot(int stripe, MemorySegment memory, EventHandle deviceDone) {
            this.stripe = stripe;
            this.memory = memory;
            this.deviceDone = deviceDone;
        }
    }

    private final VirtualGpu gpu;
    private final int slotBytes;
    private final Slot[] slots;
    /** Each stripe's free slots; guarded by this. */
    private final List<ArrayDeque<Slot>> free = new ArrayList<>();
    /** What to run when a stripe waiting for a slot gets one; guarded by this. */
    private final Runnable[] waiting;
    /** Slots whose device copy is queued, oldest first; the GPU thread's. */
    private final ArrayDeque<Slot> onDevice = new ArrayDeque<>();
    /** Stripes copying into a slot now; guarded by this. */
    private int filling;
    /** Guarded by this. */
    private boolean closed;

    /** {@value #SLOTS_PER_STRIPE} slots of {@code slotBytes} for each of {@code stripes} stripes; on the GPU thread. */
    LandingSlots(VirtualGpu gpu, int stripes, int slotBytes) {
        this.gpu = gpu;
        this.slotBytes = slotBytes;
        this.slots = new Slot[stripes * SLOTS_PER_STRIPE];
        this.waiting = new Runnable[stripes];
        for (int stripe = 0; stripe < stripes; stripe++) {
            free.add(new ArrayDeque<>());
        }
        try {
            for (int i = 0; i < slots.length; i++) {
                MemorySegment memory = gpu.memAllocHost(slotBytes);
                try {
                    slots[i] = new Slot(i / SLOTS_PER_STRIPE, memory, gpu.eventCreate());
                } catch (RuntimeException e) {
                    gpu.memFreeHost(memory);
                    throw e;
                }
                free.get(slots[i].stripe).add(slots[i]);
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    @Override
    public boolean lands(ChunkLabel label, int length) {
        return length >= Math.min(MIN_LANDED_BYTES, slotBytes) && length <= slotBytes;
    }

    @Override
    public StripedStreams.Room reserve(int stripe, ChunkLabel label, int length, Runnable roomAgain) {
        if (!lands(label, length)) {
            throw new IllegalArgumentException("a chunk of " + length + " bytes is not landed");
        }
        synchronized (this) {
            if (closed) {
                // the session is ending: its stripe reads nothing more
                return null;
            }
            Slot slot = free.get(stripe).poll();
            if (slot == null) {
                waiting[stripe] = roomAgain;
                return null;
            }
            slot.state = State.FILLING;
            filling++;
            return new SlotRoom(slot, length);
        }
    }

    /** A slot its stripe fills, by a copy or by reading its socket straight into it. */
    private final class SlotRoom implements StripedStreams.Room {
        private final Slot slot;
        private final MemorySegment memory;
        private boolean over;

        SlotRoom(Slot slot, int length) {
            this.slot = slot;
            this.memory = slot.memory.asSlice(0, length);
        }

        @Override
        public MemorySegment memory() {
            return memory;
        }

        @Override
        public ByteBuf filled() {
            finish(State.LANDED);
            return Unpooled.wrappedBuffer(memory.asByteBuffer());
        }

        @Override
        public void abandon() {
            finish(State.FREE);
        }

        private void finish(State after) {
            synchronized (LandingSlots.this) {
                if (over) {
                    throw new IllegalStateException("slot room of stripe " + slot.stripe + " was given back twice");
                }
                over = true;
                moveTo(slot, after);
                filling--;
                LandingSlots.this.notifyAll();
            }
        }
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
        try {
            gpu.eventRecord(slot.deviceDone, stream);
        } catch (RuntimeException e) {
            // the device may read the slot from now on: without an event to say when it is done, it is never reused
            moveTo(slot, State.RETIRED);
            throw e;
        }
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

    /** Moves {@code slot} to {@code state}; a slot freed lets its stripe read on if it waited for one. */
    private synchronized void moveTo(Slot slot, State state) {
        slot.state = state;
        if (state == State.FREE) {
            free.get(slot.stripe).add(slot);
            Runnable stripeWaiting = waiting[slot.stripe];
            waiting[slot.stripe] = null;
            if (stripeWaiting != null) {
                try {
                    stripeWaiting.run();
                } catch (RuntimeException stripeGone) {
                    // its event loop is shutting down with its session: nothing reads from that stripe any more
                }
            }
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
     * Frees the slots once no stripe fills one and the device is done with them. A chunk still landed in a slot
     * belongs to a session that is ending: its frame will not be served, so its memory is not read again. A stripe
     * reading its socket straight into a slot gives it back as its connection closes, which the session's end does
     * first; a slot still being filled {@link #CLOSE_PATIENCE_MILLIS} later is left allocated rather than freed under
     * a read that may still write it.
     */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            boolean interrupted = false;
            long deadline = System.nanoTime() + CLOSE_PATIENCE_MILLIS * 1_000_000L;
            for (long left = CLOSE_PATIENCE_MILLIS; filling > 0 && left > 0; ) {
                try {
                    wait(left);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
                left = (deadline - System.nanoTime()) / 1_000_000L;
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
            if (slot != null && !stillFilling(slot)) {
                gpu.eventDestroy(slot.deviceDone);
                gpu.memFreeHost(slot.memory);
            }
        }
    }

    private synchronized boolean stillFilling(Slot slot) {
        return slot.state == State.FILLING;
    }
}
