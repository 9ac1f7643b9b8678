package org.vgpu.runtime.remote.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/** The stripes' wire written by hand, for tests that play one end of it ({@link StripedStreams}'s layout). */
final class StripeWire {
    /** The request every chunk written here is labelled with. */
    static final int REQUEST = 7;

    private StripeWire() {}

    /** The header of chunk {@code number}, of {@code length} bytes, labelled as request {@link #REQUEST}'s at 0. */
    static ByteBuf header(int number, int length) {
        return Unpooled.buffer()
                .writeInt(number)
                .writeInt(length)
                .writeInt(REQUEST)
                .writeLong(0);
    }

    /** Chunk {@code number} as a stripe carries it: its {@link #header}, then its bytes. */
    static ByteBuf chunk(int number, byte[] bytes) {
        return header(number, bytes.length).writeBytes(bytes);
    }

    /** The trailer of the frame that names chunk {@code number} of {@code length} bytes. */
    static ByteBuf trailer(int number, int length) {
        return Unpooled.buffer(8).writeInt(number).writeInt(length);
    }
}
