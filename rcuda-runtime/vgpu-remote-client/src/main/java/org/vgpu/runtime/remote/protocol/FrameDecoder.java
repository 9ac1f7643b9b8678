package org.vgpu.runtime.remote.protocol;

import java.util.List;
import java.util.Locale;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;

import org.vgpu.runtime.api.VgpuException;

/**
 * Splits the byte stream into {@link Frame}s (layout: {@link Frames}) and checks everything the
 * header says before the body is buffered: the length bounds, a known opcode travelling in the
 * expected direction, and flags the opcode allows. A violation raises a VGPU_PROTOCOL_ERROR (as a
 * {@link io.netty.handler.codec.DecoderException} cause) once; from then on every byte is
 * discarded, since nothing after a broken frame can be trusted, and the handler behind this one
 * closes the connection. A connection that ends inside a frame raises the same error.
 */
public final class FrameDecoder extends ByteToMessageDecoder {
    /**
     * Reads are merged into one buffer only while the bytes held stay below this; beyond it they are
     * gathered side by side. A body may then consist of several buffers: read it with
     * {@code nioBuffers()}, which does not copy, rather than {@code nioBuffer()}, which merges.
     */
    public static final int LARGE_FRAME_BYTES = 64 << 10;

    /**
     * Merges small reads (cheap to copy, and small frames parse faster from one buffer) and gathers
     * large ones without a copy. Deciding by the size of the read, not of the frame, matters for bulk
     * copies: a read that ends one copy chunk and starts the next is still being held when the next
     * read arrives, and merging that read in would copy nearly every byte of a stream of chunks a
     * second time on the event loop.
     */
    private static final Cumulator SIZE_CUMULATOR =
            (alloc, cumulation, in) -> (long) cumulation.readableBytes() + in.readableBytes() < LARGE_FRAME_BYTES
                    ? MERGE_CUMULATOR.cumulate(alloc, cumulation, in)
                    : COMPOSITE_CUMULATOR.cumulate(alloc, cumulation, in);

    private final Opcode.Direction inbound;
    /** The longest frame accepted now: {@link Frames#MAX_LENGTH}, or less from a peer not yet trusted with more. */
    private int maxLength;
    /** Why {@link #maxLength} is below the protocol's, for the error; null when it is not. */
    private String limitedBecause;

    private boolean broken;

    /** @param inbound the direction of the frames this side receives: a worker reads requests, a client replies */
    public FrameDecoder(Opcode.Direction inbound) {
        this(inbound, Frames.MAX_BODY_BYTES, null);
    }

    /**
     * A decoder that refuses bodies over {@code maxBodyBytes} (before they are buffered) until
     * {@link #allowFullFrames} is called.
     *
     * @param limitedBecause why the limit is lower than the protocol's, for the error
     */
    public FrameDecoder(Opcode.Direction inbound, int maxBodyBytes, String limitedBecause) {
        if (maxBodyBytes < 0 || maxBodyBytes > Frames.MAX_BODY_BYTES) {
            throw new IllegalArgumentException("a frame limit of " + maxBodyBytes + " body bytes");
        }
        this.inbound = inbound;
        this.maxLength = Frames.MIN_LENGTH + maxBodyBytes;
        this.limitedBecause = maxBodyBytes < Frames.MAX_BODY_BYTES ? limitedBecause : null;
        setCumulator(SIZE_CUMULATOR);
    }

    /** Accepts frames up to the protocol's limit from now on: the peer signed in. Event loop only. */
    public void allowFullFrames() {
        maxLength = Frames.MAX_LENGTH;
        limitedBecause = null;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        Frame frame = next(in);
        if (frame != null) {
            out.add(frame);
        }
    }

    /**
     * The next whole frame at {@code in}'s reader index, its bytes consumed; null (nothing consumed) while only part
     * of one is there, or once the stream is broken. A caller that holds whole frames decodes with this without the
     * pipeline (the program's own process, where the library hands over whole requests), as long as
     * {@link #holdsPartialFrame()} is false: the bytes the pipeline holds come first.
     *
     * @throws VgpuException VGPU_PROTOCOL_ERROR for what the header says wrongly; the stream is broken from then on
     */
    public Frame next(ByteBuf in) {
        if (broken) {
            in.skipBytes(in.readableBytes());
            return null;
        }
        if (in.readableBytes() < Frames.LENGTH_FIELD_BYTES) {
            return null;
        }
        int start = in.readerIndex();
        int length = in.getInt(start);
        if (length < Frames.MIN_LENGTH || length > maxLength) {
            throw fail(
                    in,
                    "frame length " + Integer.toUnsignedString(length) + " is outside [" + Frames.MIN_LENGTH + ", "
                            + maxLength + "]" + (limitedBecause == null ? "" : " " + limitedBecause));
        }
        if (in.readableBytes() < Frames.HEADER_BYTES) {
            return null;
        }
        int code = in.getUnsignedShort(start + 4);
        int flags = in.getUnsignedShort(start + 6);
        Opcode opcode = Opcode.fromCode(code);
        if (opcode == null) {
            throw fail(in, String.format("unknown opcode 0x%04x", code));
        }
        if (opcode.direction() != inbound) {
            throw fail(
                    in,
                    opcode + " is a " + opcode.direction().name().toLowerCase(Locale.ROOT) + " frame, expected a "
                            + inbound.name().toLowerCase(Locale.ROOT));
        }
        checkFlags(in, opcode, flags);
        if (in.readableBytes() < Frames.LENGTH_FIELD_BYTES + length) {
            return null;
        }
        int requestId = in.getInt(start + 8);
        ByteBuf body = in.retainedSlice(start + Frames.HEADER_BYTES, length - Frames.MIN_LENGTH);
        in.skipBytes(Frames.LENGTH_FIELD_BYTES + length);
        return new Frame(opcode, flags, requestId, body);
    }

    /** Whether the pipeline holds bytes of a frame not yet whole, which the next bytes continue. */
    public boolean holdsPartialFrame() {
        return actualReadableBytes() > 0;
    }

    private void checkFlags(ByteBuf in, Opcode opcode, int flags) {
        if ((flags & ~Frames.KNOWN_FLAGS) != 0) {
            throw fail(in, String.format("%s carries unknown flags 0x%04x", opcode, flags));
        }
        if ((flags & Frames.FLAG_ASYNC) != 0 && !opcode.mayBeAsync()) {
            throw fail(in, opcode + " cannot be asynchronous");
        }
        if ((flags & Frames.FLAG_MORE) != 0 && !opcode.chunked()) {
            throw fail(in, opcode + " cannot be split into chunks");
        }
        if ((flags & Frames.FLAG_FAILURE_KEPT) != 0 && (opcode != Opcode.DATA || (flags & Frames.FLAG_MORE) != 0)) {
            throw fail(in, "only the last DATA chunk can say that a failure is kept, not " + opcode);
        }
        if ((flags & Frames.FLAG_IN_SLOT) != 0
                && opcode != Opcode.DATA
                && opcode != Opcode.MEMCPY_HTOD
                && opcode != Opcode.MEMCPY_HTOD_SCATTER) {
            throw fail(in, opcode + " carries no chunk to put in a shared slot");
        }
    }

    /** Called when the connection ends: bytes left over are a frame cut short. */
    @Override
    protected void decodeLast(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (!broken && in.isReadable()) {
            int expected = in.readableBytes() >= Frames.LENGTH_FIELD_BYTES
                    ? Frames.LENGTH_FIELD_BYTES + in.getInt(in.readerIndex())
                    : -1;
            throw fail(
                    in,
                    "the connection ended inside a frame: " + in.readableBytes() + " of its "
                            + (expected < 0 ? Frames.LENGTH_FIELD_BYTES + " length-field" : expected)
                            + " bytes arrived");
        }
        in.skipBytes(in.readableBytes());
    }

    private RuntimeException fail(ByteBuf in, String detail) {
        broken = true;
        in.skipBytes(in.readableBytes());
        return Frames.violation(detail);
    }
}
