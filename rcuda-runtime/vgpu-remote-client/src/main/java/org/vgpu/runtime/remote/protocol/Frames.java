package org.vgpu.runtime.remote.protocol;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The frame layout shared by every frame in both directions, and the helpers that write and read
 * its parts. A frame is
 * <pre>
 *   offset  size  field
 *   0       4     length: bytes after this field, {@value #MIN_LENGTH}..{@link #MAX_LENGTH}
 *   4       2     opcode ({@link Opcode#code()})
 *   6       2     flags ({@link #FLAG_ASYNC}, {@link #FLAG_MORE}, {@link #FLAG_FAILURE_KEPT}, {@link #FLAG_IN_SLOT}; other bits must be 0)
 *   8       4     request id: chosen by the client, echoed by every reply to that request
 *   12      ...   body, laid out per opcode (see {@link Opcode})
 * </pre>
 * all big-endian. The length prefix lets a reader refuse an oversized frame before buffering it.
 */
public final class Frames {
    /** First int32 of a {@link Opcode#HELLO} body: "VGPU" in ASCII, so a stray connection is told apart from an old client. */
    public static final int MAGIC = 0x56475055;
    /**
     * The newest protocol version this build speaks: version 2 adds the offer of shared memory to HELLO and the
     * answer to it to WELCOME, and {@link #FLAG_IN_SLOT}. A worker answers a HELLO of any version from
     * {@link #OLDEST_PROTOCOL_VERSION} to this one in that version; a client whose HELLO of version 2 is refused
     * by an older worker says HELLO again in version 1.
     */
    public static final int PROTOCOL_VERSION = 2;
    /** The oldest protocol version this build still speaks. */
    public static final int OLDEST_PROTOCOL_VERSION = 1;

    public static final int LENGTH_FIELD_BYTES = 4;
    /** Length field, opcode, flags and request id. */
    public static final int HEADER_BYTES = 12;
    /** The smallest length field: opcode, flags and request id with an empty body. */
    public static final int MIN_LENGTH = HEADER_BYTES - LENGTH_FIELD_BYTES;
    /** The largest body; copies are split into chunks well below it. */
    public static final int MAX_BODY_BYTES = 16 << 20;
    /** The largest length field a reader accepts. */
    public static final int MAX_LENGTH = MIN_LENGTH + MAX_BODY_BYTES;

    /** The request wants no reply on success; its failure is reported by the next synchronizing request. */
    public static final int FLAG_ASYNC = 1;
    /** Another chunk of the same request follows ({@link Opcode#MEMCPY_HTOD}, {@link Opcode#MEMCPY_HTOD_SCATTER}, {@link Opcode#DATA}). */
    public static final int FLAG_MORE = 2;
    /**
     * On the last {@link Opcode#DATA} chunk of an asynchronous copy: the worker keeps the failure
     * of an earlier asynchronous request for the next synchronizing one. Without it the copy's
     * last chunk proves its stream done with nothing to report, so the client may wait for it
     * instead of asking the worker.
     */
    public static final int FLAG_FAILURE_KEPT = 4;

    /**
     * On a chunk ({@link Opcode#MEMCPY_HTOD}, {@link Opcode#MEMCPY_HTOD_SCATTER}, {@link Opcode#DATA}) of a session
     * whose bulk bytes go through shared memory: the body's trailing bytes are {@code uint32 slot, uint32 length}
     * naming the slot that holds the chunk ({@link org.vgpu.runtime.remote.transport.SharedMemoryRing}), not the
     * chunk itself. Only after both ends agreed on that path ({@link Opcode#BULK_PATH}).
     */
    public static final int FLAG_IN_SLOT = 8;

    static final int KNOWN_FLAGS = FLAG_ASYNC | FLAG_MORE | FLAG_FAILURE_KEPT | FLAG_IN_SLOT;

    private Frames() {}

    /**
     * Starts a frame at {@code out}'s writer index: the length is written by {@link #finish}.
     *
     * @return the frame's start index, to pass to {@link #finish}
     */
    public static int begin(ByteBuf out, Opcode opcode, int flags, int requestId) {
        int start = out.writerIndex();
        out.writeInt(0);
        out.writeShort(opcode.code());
        out.writeShort(flags);
        out.writeInt(requestId);
        return start;
    }

    /** Adds {@code flags} to those of the frame begun at {@code start} of {@code out}. */
    public static void addFlags(ByteBuf out, int start, int flags) {
        out.setShort(start + 6, out.getUnsignedShort(start + 6) | flags);
    }

    /** Fills in the length of the frame begun at {@code start}; refuses a body beyond {@link #MAX_BODY_BYTES}. */
    public static void finish(ByteBuf out, int start) {
        int length = out.writerIndex() - start - LENGTH_FIELD_BYTES;
        if (length > MAX_LENGTH) {
            out.writerIndex(start);
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "a request body of " + (length - MIN_LENGTH)
                            + " bytes exceeds the remote protocol's frame limit of " + MAX_BODY_BYTES + " bytes");
        }
        out.setInt(start, length);
    }

    /** Sets the length of a frame begun at {@code start} whose remaining {@code trailingBytes} are written later. */
    public static void finishWithTrailing(ByteBuf out, int start, int trailingBytes) {
        int length = out.writerIndex() - start - LENGTH_FIELD_BYTES + trailingBytes;
        if (trailingBytes < 0 || length > MAX_LENGTH) {
            throw new IllegalArgumentException("frame of " + length + " bytes");
        }
        out.setInt(start, length);
    }

    /** Copies {@code bytes} of {@code src} from {@code offset} to {@code out}: the bytes of a frame finished {@link #finishWithTrailing}. */
    public static void writeTrailing(ByteBuf out, MemorySegment src, long offset, int bytes) {
        out.ensureWritable(bytes);
        MemorySegment.copy(src, offset, MemorySegment.ofBuffer(out.nioBuffer(out.writerIndex(), bytes)), 0, bytes);
        out.writerIndex(out.writerIndex() + bytes);
    }

    public static void writeString(ByteBuf out, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        out.writeInt(bytes.length);
        out.writeBytes(bytes);
    }

    /** Reads a string written by {@link #writeString}; a length beyond the frame is a protocol error. */
    public static String readString(ByteBuf in) {
        int length = in.readInt();
        if (length < 0 || length > in.readableBytes()) {
            throw violation("string of " + length + " bytes in a body with " + in.readableBytes() + " bytes left");
        }
        String value = in.toString(in.readerIndex(), length, StandardCharsets.UTF_8);
        in.skipBytes(length);
        return value;
    }

    /** Returns {@code value} after checking that {@code frame}'s body, read through {@code in}, held nothing more. */
    static <T> T consumed(Frame frame, ByteBuf in, T value) {
        requireConsumed(frame, in);
        return value;
    }

    /** Checks that {@code frame}'s body, read through {@code in}, held nothing more. */
    static void requireConsumed(Frame frame, ByteBuf in) {
        if (in.isReadable()) {
            throw violation(frame.opcode() + " body has " + in.readableBytes() + " bytes too many");
        }
    }

    /** The error for anything that breaks the protocol; the peer that detects it closes the connection. */
    public static VgpuException violation(String detail) {
        return new VgpuException(ErrorCode.VGPU_PROTOCOL_ERROR, detail);
    }
}
