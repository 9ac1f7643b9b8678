package org.vgpu.runtime.remote.protocol;

import java.util.ArrayList;
import java.util.List;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.VgpuException;

/**
 * Reads reply bodies (layouts: {@link Opcode}): {@link #dispatch} for the frame itself, and one
 * reader per kind of OK result of the requests written by hand ({@link ResultDecoder} has those of
 * the one-to-one calls). A malformed body is a VGPU_PROTOCOL_ERROR: a client trusts a
 * worker no more than a worker trusts a client.
 */
public final class ReplyDecoder {
    private ReplyDecoder() {}

    /** Decodes {@code frame} and calls the visitor method of its opcode. The frame stays the caller's. */
    public static void dispatch(Frame frame, ReplyVisitor visitor) {
        ByteBuf in = frame.body().duplicate();
        try {
            switch (frame.opcode()) {
                case WELCOME -> visitor.welcome(frame.requestId(), Frames.consumed(frame, in, readWelcome(in)));
                case PONG -> {
                    Frames.consumed(frame, in, frame);
                    visitor.pong(frame.requestId());
                }
                case OK -> visitor.ok(frame.requestId(), in);
                case ERROR -> visitor.error(frame.requestId(), Frames.consumed(frame, in, readError(in)));
                case DATA -> {
                    long offset = in.readLong();
                    visitor.data(frame.requestId(), frame.hasMore(), frame.failureKept(), offset, in);
                }
                default -> throw Frames.violation(frame.opcode() + " is not a reply");
            }
        } catch (IndexOutOfBoundsException e) {
            throw Frames.violation(frame.opcode() + " body of " + frame.body().readableBytes() + " bytes is truncated");
        }
    }

    /** The result of {@link Opcode#MEM_GET_INFO}. */
    public static MemoryInfo memoryInfo(ByteBuf result) {
        return read(result, "MEM_GET_INFO", in -> new MemoryInfo(in.readLong(), in.readLong()));
    }

    /** The result of {@link Opcode#MODULE_GET_FUNCTION}. */
    public static KernelSignature kernelSignature(String kernelName, ByteBuf result) {
        return read(result, "MODULE_GET_FUNCTION", in -> {
            int count = in.readUnsignedShort();
            List<Integer> sizes = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                sizes.add(in.readInt());
            }
            return new KernelSignature(kernelName, sizes);
        });
    }

    /** The result of {@link Opcode#HOST_REGION_CREATE}. */
    public static HostRegionGrant hostRegion(ByteBuf result) {
        return read(
                result,
                "HOST_REGION_CREATE",
                in -> new HostRegionGrant(in.readInt(), Frames.readString(in), in.readLong()));
    }

    /** Checks that a request without a result got an empty OK. */
    public static Void empty(ByteBuf result) {
        return read(result, "OK", in -> null);
    }

    interface BodyReader<T> {
        T read(ByteBuf in);
    }

    /** A result read by {@code reader}, which must consume it exactly; {@link ResultDecoder}'s readers come here. */
    static <T> T read(ByteBuf result, String what, BodyReader<T> reader) {
        ByteBuf in = result.duplicate();
        T value;
        try {
            value = reader.read(in);
        } catch (IndexOutOfBoundsException e) {
            throw Frames.violation("result of " + what + " is truncated (" + result.readableBytes() + " bytes)");
        } catch (VgpuException e) {
            // A value the API refuses (a region of -4 TiB) came from the worker, not from the caller: the caller's
            // call was not invalid, the reply was (found by WireDecoderFuzzTest#replies).
            if (e.code() == ErrorCode.VGPU_PROTOCOL_ERROR) {
                throw e;
            }
            throw Frames.violation("result of " + what + " holds an invalid value: " + e.detail());
        }
        if (in.isReadable()) {
            throw Frames.violation("result of " + what + " has " + in.readableBytes() + " bytes too many");
        }
        return value;
    }

    private static Welcome readWelcome(ByteBuf in) {
        int version = in.readUnsignedShort();
        String workerId = Frames.readString(in);
        int idleTimeoutMillis = in.readInt();
        DeviceProperties device = new DeviceProperties(
                Frames.readString(in),
                in.readLong(),
                in.readInt(),
                in.readInt(),
                in.readInt(),
                in.readInt(),
                in.readInt(),
                in.readBoolean());
        if (idleTimeoutMillis < 1) {
            throw Frames.violation("WELCOME idle timeout must be >= 1 ms, got " + idleTimeoutMillis);
        }
        SharedRegionOffer region = version >= 2
                ? new SharedRegionOffer(Frames.readString(in), in.readLong(), Frames.readString(in))
                : SharedRegionOffer.none("the worker speaks protocol version " + version);
        StripeOffer stripes = version >= 2 && in.isReadable()
                ? new StripeOffer(in.readUnsignedByte(), Frames.readString(in), Frames.readString(in))
                : StripeOffer.none(StripeOffer.NOT_ASKED);
        if (stripes.offered() == stripes.key().isEmpty()) {
            throw Frames.violation("WELCOME offers " + stripes.stripes() + " stripes with "
                    + (stripes.key().isEmpty() ? "no" : "a") + " stripe key");
        }
        return new Welcome(version, workerId, idleTimeoutMillis, device, region, stripes);
    }

    /** The failure {@code frame}, an ERROR, carries. The frame stays the caller's. */
    public static VgpuException error(Frame frame) {
        if (frame.opcode() != Opcode.ERROR) {
            throw Frames.violation("expected an ERROR, got " + frame.opcode());
        }
        ByteBuf in = frame.body().duplicate();
        try {
            return Frames.consumed(frame, in, readError(in));
        } catch (IndexOutOfBoundsException e) {
            throw Frames.violation("ERROR body of " + frame.body().readableBytes() + " bytes is truncated");
        }
    }

    /**
     * The failure an ERROR frame carries. The name decides the code, so the two ends agree even if
     * their numbering ever drifted; a name this build does not know keeps its text in the detail.
     */
    private static VgpuException readError(ByteBuf in) {
        int number = in.readInt();
        String name = Frames.readString(in);
        String detail = Frames.readString(in);
        ErrorCode code;
        try {
            code = ErrorCode.valueOf(name);
        } catch (IllegalArgumentException unknown) {
            code = ErrorCode.fromNumber(number);
            detail = name + " (" + number + "): " + detail;
        }
        return new VgpuException(code, detail);
    }
}
