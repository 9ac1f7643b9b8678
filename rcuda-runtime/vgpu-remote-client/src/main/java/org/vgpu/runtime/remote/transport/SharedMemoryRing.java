package org.vgpu.runtime.remote.transport;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledDirectByteBuf;

import org.vgpu.runtime.remote.protocol.Frames;

/**
 * Bulk bytes through memory that a worker and its client on the same host both map: a file the worker creates
 * (mode 600, a fresh random name, never an existing file) and the client opens by the path the worker's WELCOME
 * gave, checking a random nonce the worker wrote into it, after which the worker unlinks it. The region holds two
 * rings of slots, one per direction, each slot one chunk; a chunk's frame carries its slot number and length
 * ({@link Frames#FLAG_IN_SLOT}), its bytes are in the slot.
 *
 * <pre>
 *   offset                   size                 field
 *   0                        4                    magic "VGSH"
 *   4                        4                    layout version (1)
 *   8                        4                    slots per direction, 1..{@value #MAX_SLOTS}
 *   12                       4                    bytes per slot, 4 KiB..{@value #MAX_SLOT_BYTES}, a multiple of 4 KiB
 *   16                       8                    nonce
 *   24                       8                    the client's acknowledgement: the nonce's complement once it mapped the region
 *   64                       4 x 2 x slots        slot states: client to worker, then worker to client ({@code FREE, FILLED, TAKEN})
 *   4096                     slot bytes x slots   client-to-worker slots
 *   ...                      slot bytes x slots   worker-to-client slots
 * </pre>
 *
 * A sender takes its direction's slots round-robin, waits until the next is FREE (back-pressure), copies the chunk in
 * (a large one with several threads, {@link ParallelCopy}) and marks it FILLED (a release store) before the frame
 * naming it is written; the receiver checks the frame's slot number and length against the ring's geometry, moves the
 * slot from FILLED to TAKEN (anything else is a protocol error) and gives a buffer over it whose release marks it FREE.
 * Only slot numbers and lengths from frames are trusted after those checks, never values read from the shared memory,
 * so a peer that scribbles over the region spoils its own data and nothing else. The mapping belongs to an automatic
 * arena: it is unmapped once neither the ring nor a buffer over it is reachable, so a late release never touches
 * unmapped memory. A peer that shrinks the file faults this process's next access to it, which the JVM raises as an
 * {@link InternalError} in the accessing thread, not a crash; the file is gone from the filesystem as soon as the
 * client mapped it.
 */
public final class SharedMemoryRing implements BulkBytePath {
    /** "VGSH". */
    static final int MAGIC = 0x56475348;

    static final int LAYOUT_VERSION = 1;
    /** The most slots per direction a worker creates or a client accepts. */
    public static final int MAX_SLOTS = 16;
    /** The largest slot a worker creates or a client accepts. */
    public static final int MAX_SLOT_BYTES = 4 << 20;

    static final int PAGE = 4096;
    private static final long STATES_OFFSET = 64;
    private static final int FREE = 0;
    private static final int FILLED = 1;
    private static final int TAKEN = 2;
    private static final VarHandle STATE = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle ACK = ValueLayout.JAVA_LONG.varHandle();
    private static final long ACK_OFFSET = 24;

    /** Which end of the session this process is: it sends on one direction's ring and receives on the other. */
    public enum Side {
        CLIENT,
        WORKER
    }

    private final MemorySegment region;
    private final Path file;
    private final long nonce;
    private final int slots;
    private final int slotBytes;
    private final int sendRing;
    private final int receiveRing;
    private int nextSend;
    private volatile boolean closed;

    private SharedMemoryRing(MemorySegment region, Path file, long nonce, int slots, int slotBytes, Side side) {
        this.region = region;
        this.file = file;
        this.nonce = nonce;
        this.slots = slots;
        this.slotBytes = slotBytes;
        this.sendRing = side == Side.CLIENT ? 0 : 1;
        this.receiveRing = 1 - sendRing;
    }

    /** The size of a region of {@code slots} slots of {@code slotBytes} each way. */
    public static long regionBytes(int slots, int slotBytes) {
        return PAGE + 2L * slots * slotBytes;
    }

    /**
     * The worker's side: creates a fresh file in {@code directory} readable and writable by this user alone and
     * maps it.
     *
     * @throws IOException the directory is missing, not writable, or the mapping failed
     */
    public static SharedMemoryRing create(Path directory, int slots, int slotBytes) throws IOException {
        checkGeometry(slots, slotBytes);
        long nonce = OwnerOnlyMapping.nonce();
        OwnerOnlyMapping created =
                OwnerOnlyMapping.create(directory, "vgpu-bulk-", regionBytes(slots, slotBytes), Arena.ofAuto());
        Path file = created.file();
        try {
            MemorySegment region = created.mapping();
            region.set(ValueLayout.JAVA_INT_UNALIGNED, 4, LAYOUT_VERSION);
            region.set(ValueLayout.JAVA_INT_UNALIGNED, 8, slots);
            region.set(ValueLayout.JAVA_INT_UNALIGNED, 12, slotBytes);
            region.set(ValueLayout.JAVA_LONG_UNALIGNED, 16, nonce);
            region.set(ValueLayout.JAVA_INT_UNALIGNED, 0, MAGIC);
            return new SharedMemoryRing(region, file, nonce, slots, slotBytes, Side.WORKER);
        } catch (RuntimeException e) {
            Files.deleteIfExists(file);
            throw e;
        }
    }

    /**
     * The client's side: maps the region a worker created at {@code file}, which must be a regular file of this
     * user's, mode 600, not a link, holding {@code nonce}.
     *
     * @throws IOException why it cannot be used, in words for the log line that says the path falls back in-band
     */
    public static SharedMemoryRing open(Path file, long nonce) throws IOException {
        MemorySegment region = OwnerOnlyMapping.open(file, PAGE, regionBytes(MAX_SLOTS, MAX_SLOT_BYTES), Arena.ofAuto())
                .mapping();
        int magic = region.get(ValueLayout.JAVA_INT_UNALIGNED, 0);
        int version = region.get(ValueLayout.JAVA_INT_UNALIGNED, 4);
        int slots = region.get(ValueLayout.JAVA_INT_UNALIGNED, 8);
        int slotBytes = region.get(ValueLayout.JAVA_INT_UNALIGNED, 12);
        if (magic != MAGIC || version != LAYOUT_VERSION) {
            throw new IOException(file + " is no shared region of layout " + LAYOUT_VERSION);
        }
        if (region.get(ValueLayout.JAVA_LONG_UNALIGNED, 16) != nonce) {
            throw new IOException(file + " holds another nonce than the worker announced");
        }
        try {
            checkGeometry(slots, slotBytes);
        } catch (IllegalArgumentException e) {
            throw new IOException(file + ": " + e.getMessage(), e);
        }
        if (region.byteSize() != regionBytes(slots, slotBytes)) {
            throw new IOException(
                    file + " holds " + region.byteSize() + " bytes, its header says " + regionBytes(slots, slotBytes));
        }
        return new SharedMemoryRing(region, file, nonce, slots, slotBytes, Side.CLIENT);
    }

    private static void checkGeometry(int slots, int slotBytes) {
        if (slots < 1 || slots > MAX_SLOTS) {
            throw new IllegalArgumentException("slots per direction must be in [1, " + MAX_SLOTS + "], got " + slots);
        }
        if (slotBytes < PAGE || slotBytes > MAX_SLOT_BYTES || slotBytes % PAGE != 0) {
            throw new IllegalArgumentException("slot bytes must be a multiple of " + PAGE + " in [" + PAGE + ", "
                    + MAX_SLOT_BYTES + "], got " + slotBytes);
        }
    }

    /** The client's side: says it mapped the region, before it sends anything after the WELCOME that named it. */
    public void acknowledge() {
        ACK.setRelease(region, ACK_OFFSET, ~nonce);
    }

    /** The worker's side: whether the client acknowledged the region ({@link #acknowledge}). */
    public boolean acknowledged() {
        return (long) ACK.getAcquire(region, ACK_OFFSET) == ~nonce;
    }

    /** The file the worker created; the client opens it by this path. */
    public Path file() {
        return file;
    }

    /** The random number the worker wrote into the region, which the client checks. */
    public long nonce() {
        return nonce;
    }

    /** The largest chunk one slot holds. */
    public int slotBytes() {
        return slotBytes;
    }

    /** Removes the file from the filesystem; both mappings stay. Once the client mapped it, or gave up. */
    public void unlink() throws IOException {
        Files.deleteIfExists(file);
    }

    @Override
    public int frameFlags() {
        return Frames.FLAG_IN_SLOT;
    }

    @Override
    public int maxChunkBytes() {
        return slotBytes;
    }

    @Override
    public int trailerBytes(int length) {
        return 8;
    }

    @Override
    public ByteBuf send(MemorySegment src, long offset, int length, ChunkLabel label) {
        if (length < 0 || length > slotBytes) {
            throw new IllegalArgumentException("a chunk of " + length + " bytes does not fit a slot of " + slotBytes);
        }
        int slot = nextSend;
        long state = stateOffset(sendRing, slot);
        while ((int) STATE.getAcquire(region, state) != FREE) {
            if (closed) {
                throw new IllegalStateException("the shared region was closed while a chunk waited for a slot");
            }
            LockSupport.parkNanos(this, 20_000);
        }
        ParallelCopy.shared().copy(src, offset, region, dataOffset(sendRing, slot), length);
        STATE.setRelease(region, state, FILLED);
        nextSend = (slot + 1) % slots;
        return Unpooled.buffer(8, 8).writeInt(slot).writeInt(length);
    }

    @Override
    public ByteBuf receive(ByteBuf trailer) {
        if (trailer.readableBytes() != 8) {
            throw Frames.violation("a chunk in a shared slot names it in 8 bytes, got " + trailer.readableBytes());
        }
        int slot = trailer.getInt(trailer.readerIndex());
        int length = trailer.getInt(trailer.readerIndex() + 4);
        if (slot < 0 || slot >= slots) {
            throw Frames.violation("shared slot " + slot + " is outside [0, " + slots + ")");
        }
        if (length < 0 || length > slotBytes) {
            throw Frames.violation("a chunk of " + length + " bytes in a shared slot of " + slotBytes + " bytes");
        }
        long state = stateOffset(receiveRing, slot);
        if (!STATE.compareAndSet(region, state, FILLED, TAKEN)) {
            throw Frames.violation("shared slot " + slot + " was named by a frame but not filled");
        }
        ByteBuffer bytes = region.asSlice(dataOffset(receiveRing, slot), length).asByteBuffer();
        return new SlotBuffer(bytes, () -> STATE.setRelease(region, state, FREE));
    }

    @Override
    public long boundBytes() {
        return region.byteSize();
    }

    @Override
    public String describe() {
        return "same-host shared memory (" + slots + " slots of " + (slotBytes >> 10) + " KiB each way)";
    }

    @Override
    public void close() {
        closed = true;
    }

    private long stateOffset(int ring, int slot) {
        return STATES_OFFSET + 4L * ((long) ring * slots + slot);
    }

    private long dataOffset(int ring, int slot) {
        return PAGE + ((long) ring * slots + slot) * slotBytes;
    }

    /** A received chunk: the slot's bytes, freed for the sender when the buffer is released. */
    private static final class SlotBuffer extends UnpooledDirectByteBuf {
        private final Runnable free;

        SlotBuffer(ByteBuffer bytes, Runnable free) {
            super(UnpooledByteBufAllocator.DEFAULT, bytes, bytes.remaining());
            this.free = free;
        }

        @Override
        protected void deallocate() {
            super.deallocate();
            free.run();
        }
    }
}
