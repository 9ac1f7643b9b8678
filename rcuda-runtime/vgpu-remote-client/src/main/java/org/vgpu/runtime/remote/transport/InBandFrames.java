package org.vgpu.runtime.remote.transport;

import java.lang.foreign.MemorySegment;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * The bulk bytes travel inside their frames on the session's connection: a chunk's trailer is its bytes.
 * Large native chunks are wrapped, not copied, so the caller's memory goes to the socket as it is. An instance may
 * say why a session's bytes go this way rather than through shared memory.
 */
public final class InBandFrames implements BulkBytePath {
    /** The path of a session that asked for nothing else. */
    public static final InBandFrames INSTANCE = new InBandFrames("");

    private final String reason;

    private InBandFrames(String reason) {
        this.reason = reason;
    }

    /** The path of a session whose bytes go in-band for {@code reason}, which {@link #describe} says. */
    public static InBandFrames because(String reason) {
        return new InBandFrames(reason);
    }

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
    public ByteBuf send(MemorySegment src, long offset, int length, ChunkLabel label) {
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
        return reason.isEmpty()
                ? "in-band (frames on the connection)"
                : "in-band (frames on the connection): " + reason;
    }

    @Override
    public void close() {
        // nothing held
    }
}
