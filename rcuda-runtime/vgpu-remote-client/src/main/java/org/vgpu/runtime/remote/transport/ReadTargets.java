package org.vgpu.runtime.remote.transport;

import java.util.function.Supplier;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.util.UncheckedBooleanSupplier;

/**
 * The receive buffers of one channel, which a handler of the channel may point elsewhere for the reads to come: a
 * stripe that knows where a chunk's bytes go reads them from the socket straight into that memory, so the kernel's
 * copy is their only one, rather than into a buffer of Netty's and then once more in user space.
 *
 * <p>Everything else (how much to read per pass, when to stop) is the wrapped allocator's. A channel must get its own
 * instance before its first read ({@link io.netty.channel.ChannelOption#RECVBUF_ALLOCATOR} set per channel, as the
 * worker's accepted connections do), since a channel keeps the handle it made first. Event loop only.
 */
public final class ReadTargets implements RecvByteBufAllocator {
    private final RecvByteBufAllocator buffers;
    /** Where the next reads go, or null for the wrapped allocator's buffers. */
    private Supplier<ByteBuf> target;

    /** @param buffers makes the buffers of reads not pointed elsewhere, and decides how much a pass reads */
    public ReadTargets(RecvByteBufAllocator buffers) {
        this.buffers = buffers;
    }

    /**
     * Makes each read from now on go into the buffer {@code next} supplies (empty, its writable bytes the most that
     * read may take), or into the wrapped allocator's buffers again where {@code next} is null.
     */
    public void readInto(Supplier<ByteBuf> next) {
        target = next;
    }

    @Override
    @SuppressWarnings("deprecation") // Netty's own return type: its handles are used through it
    public Handle newHandle() {
        return new TargetHandle((ExtendedHandle) buffers.newHandle());
    }

    /** The wrapped allocator's handle, with the buffer of each read chosen here. */
    private final class TargetHandle extends DelegatingHandle implements ExtendedHandle {
        TargetHandle(ExtendedHandle decides) {
            super(decides);
        }

        @Override
        public ByteBuf allocate(ByteBufAllocator alloc) {
            Supplier<ByteBuf> next = target;
            return next != null ? next.get() : super.allocate(alloc);
        }

        @Override
        public boolean continueReading(UncheckedBooleanSupplier maybeMoreDataSupplier) {
            return ((ExtendedHandle) delegate()).continueReading(maybeMoreDataSupplier);
        }
    }
}
