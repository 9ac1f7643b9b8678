package org.vgpu.runtime.remote.transport;

import java.lang.foreign.MemorySegment;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * The bulk bytes travel inside their frames on the session's connection: a chunk's trailer is its bytes.
 * Large native chunks are wrapped, not copied, so the caller's memory goes to the socket as it is.
 */
public final class InBandFrames implements BulkBytePath {
    /** The one instance: the path holds no state. */
    public static final InBandFrames INSTANCE = new InBandFrames();

    private InBandFrames() {}

    @Override
    public int frameFlags() {
        return 0;
    }

    @Override
    public int maxChunkBytes() {
        return Integer.MAX_VALUE;
    }

    @Override
    public int trailerBytes(int length) {
        return length;
    }

    @Override
    public ByteBuf send(MemorySegment src, long offset, int length) {
        return Unpooled.wrappedBuffer(src.asSlice(offset, length).asByteBuffer());
    }

    @Override
    public ByteBuf receive(ByteBuf trailer) {
        return trailer.retainedDuplicate();
    }

    @Override
    public long boundBytes() {
        return 0;
    }

    @Override
    public String describe() {
        return "in-band (frames on the connection)";
    }

    @Override
    public void close() {
        // nothing held
    }
}
