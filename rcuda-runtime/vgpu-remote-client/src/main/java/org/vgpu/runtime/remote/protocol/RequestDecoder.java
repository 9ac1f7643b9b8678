package org.vgpu.runtime.remote.protocol;

import io.netty.buffer.ByteBuf;

import org.vgpu.common.contract.BridgeContract;

/**
 * The limits of request bodies, and the HELLO a session opens with. The bodies themselves are read
 * by the generated {@link RequestDispatch} through {@link WireCodecs}, as {@link RemoteCalls} lays them out.
 */
public final class RequestDecoder {
    /** The largest DATA chunk a client may ask for: the body limit less the offset field. */
    public static final int MAX_CHUNK_BYTES = Frames.MAX_BODY_BYTES - Long.BYTES;
    /** The most regions one {@link Opcode#MEMCPY_DTOH_GATHER} may name: as many as fit one body. */
    public static final int MAX_GATHER_REGIONS = (Frames.MAX_BODY_BYTES - 3 * Integer.BYTES) / (2 * Long.BYTES);
    /** Pieces one scatter chunk may name: a table of 1 MiB, which leaves most of a frame to the bytes. */
    public static final int MAX_SCATTER_PIECES = 1 << 16;
    /**
     * The largest HELLO body ({@link WireCodecs#readHello}): the magic number, protocol version, vGPU
     * index, window base and size, and a session token of at most {@link BridgeContract#TOKEN_BYTES}
     * characters, which are ASCII (base64url and dots). A worker takes no longer frame from a peer
     * that has not signed in, so that a connection before sign-in holds a few hundred bytes, not a
     * whole frame of {@link Frames#MAX_BODY_BYTES}.
     */
    public static final int MAX_HELLO_BODY_BYTES = Integer.BYTES
            + Short.BYTES
            + Integer.BYTES
            + 2 * Long.BYTES
            + Integer.BYTES
            + BridgeContract.TOKEN_BYTES
            + 2 * Byte.BYTES;

    private RequestDecoder() {}

    /** The HELLO a connection must open with; any other first frame is a protocol error. */
    public static Hello hello(Frame frame) {
        if (frame.opcode() != Opcode.HELLO) {
            throw Frames.violation("a session must open with HELLO, got " + frame.opcode());
        }
        ByteBuf in = frame.body().duplicate();
        try {
            return Frames.consumed(frame, in, WireCodecs.readHello(in));
        } catch (IndexOutOfBoundsException e) {
            throw Frames.violation("HELLO body of " + frame.body().readableBytes() + " bytes is truncated");
        }
    }
}
