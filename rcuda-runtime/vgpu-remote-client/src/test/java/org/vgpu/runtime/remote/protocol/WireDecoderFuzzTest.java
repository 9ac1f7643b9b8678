package org.vgpu.runtime.remote.protocol;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import org.junit.jupiter.api.extension.ExtendWith;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.VgpuException;

/**
 * Fuzz targets for the wire decoders (docs/fuzzing.md): bytes as a peer would send them go through the
 * {@link FrameDecoder} and then the body decoders, as a worker ({@link RequestDecoder}, {@link RequestDispatch}) or a
 * client ({@link ReplyDecoder} and every reader of an OK's result) reads them. Whatever the bytes, the only failure
 * allowed is a VGPU_PROTOCOL_ERROR, which ends that one connection, and for a request also CUDA_ERROR_INVALID_VALUE,
 * which fails that request only; any other exception would end a session for the wrong reason or crash the event
 * loop. Every frame that decodes must also round-trip: written back out by the encoder (the generated
 * {@link RequestEncoder} and {@link ResultEncoder}, and {@link ReplyEncoder}) and decoded again, it gives the same
 * value, and written out once more, the same bytes, so that the encoders and decoders agree on every frame a peer may
 * send. Every frame is released, so a leaked buffer fails the class (NettyLeaks). The committed inputs
 * (WireDecoderFuzzTestInputs/) are valid frames of every kind and each crash found.
 */
@ExtendWith(NettyLeaks.class)
class WireDecoderFuzzTest {
    @FuzzTest(maxDuration = "1m")
    void requests(byte[] wire) {
        decodeEach(Opcode.Direction.REQUEST, wire, frame -> {
            if (frame.opcode() == Opcode.HELLO) {
                RequestDecoder.hello(frame);
                requireRoundTrip(Opcode.Direction.REQUEST, frame, HELLO);
            } else if (acceptedValue(frame)) {
                requireRoundTrip(Opcode.Direction.REQUEST, frame, REQUEST);
            }
        });
    }

    @FuzzTest(maxDuration = "1m")
    void replies(byte[] wire) {
        decodeEach(Opcode.Direction.REPLY, wire, frame -> {
            ReplyDecoder.dispatch(frame, new RecordingVisitors.Replies() {
                /** An OK's result is read by what the request expects: try every reader on the same bytes. */
                @Override
                public void ok(int requestId, ByteBuf result) {
                    for (ResultCodec codec : RESULT_CODECS) {
                        protocolErrorAllowed(() -> {
                            codec.reader().read(result);
                            requireRoundTrip(Opcode.Direction.REPLY, frame, codec);
                        });
                    }
                }
            });
            if (frame.opcode() != Opcode.OK) {
                requireRoundTrip(Opcode.Direction.REPLY, frame, REPLY);
            }
        });
    }

    /**
     * Whether the generated dispatch hands {@code frame}'s values to a visitor: a well-framed request with a value the
     * call refuses (a launch's grid of 0) fails only that request, with CUDA_ERROR_INVALID_VALUE, and the session goes
     * on (SessionExecutor.handle).
     */
    private static boolean acceptedValue(Frame frame) {
        try {
            RequestDispatch.dispatch(frame, new RecordingVisitors.Requests());
            return true;
        } catch (VgpuException e) {
            if (e.code() != ErrorCode.CUDA_ERROR_INVALID_VALUE) {
                throw e;
            }
            return false;
        }
    }

    // ---- round trips

    /** How a round trip reads a frame's value and writes that value back out as a frame. */
    private interface FrameCodec {
        Object read(Frame frame);

        void write(Frame frame, ByteBuf out);
    }

    /**
     * Writes {@code decoded}'s value back out with {@code codec}, decodes that, and requires the same value; written
     * out once more, the same bytes. A failure on the way (the encoder refusing a decoded value, the decoder refusing
     * an encoded one) is an assertion, never a protocol error, which the targets allow.
     */
    private static void requireRoundTrip(Opcode.Direction direction, Frame decoded, FrameCodec codec) {
        Object value = codec.read(decoded);
        ByteBuf once = Unpooled.buffer();
        ByteBuf twice = Unpooled.buffer();
        try {
            codec.write(decoded, once);
            Frame again = decodeOne(direction, once);
            try {
                Object valueAgain = codec.read(again);
                if (!Objects.equals(value, valueAgain)) {
                    throw new AssertionError(
                            decoded + " decoded as " + value + ", encoded and decoded again as " + valueAgain);
                }
                codec.write(again, twice);
            } finally {
                again.release();
            }
            if (!ByteBufUtil.equals(once, twice)) {
                throw new AssertionError(decoded + " encoded as " + ByteBufUtil.hexDump(once) + ", then as "
                        + ByteBufUtil.hexDump(twice));
            }
        } catch (VgpuException e) {
            throw new AssertionError(decoded + " decoded but did not round-trip", e);
        } finally {
            once.release();
            twice.release();
        }
    }

    /** The one frame {@code wire} holds. */
    private static Frame decodeOne(Opcode.Direction direction, ByteBuf wire) {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(direction));
        try {
            channel.writeInbound(wire.retainedDuplicate());
            channel.finish();
        } catch (DecoderException e) {
            throw new AssertionError("an encoded frame does not decode: " + ByteBufUtil.hexDump(wire), e.getCause());
        }
        Frame frame = channel.readInbound();
        Frame extra = channel.readInbound();
        if (frame == null || extra != null) {
            if (frame != null) {
                frame.release();
            }
            if (extra != null) {
                extra.release();
            }
            throw new AssertionError("an encoded frame is not one frame: " + ByteBufUtil.hexDump(wire));
        }
        return frame;
    }

    /** A HELLO as the worker reads it, written by the generated encoder. */
    private static final FrameCodec HELLO = new FrameCodec() {
        @Override
        public Object read(Frame frame) {
            return RequestDecoder.hello(frame);
        }

        @Override
        public void write(Frame frame, ByteBuf out) {
            new RequestEncoder().wrap(out).hello(frame.requestId(), RequestDecoder.hello(frame));
        }
    };

    /** Any other request as the generated dispatch reads it, written by the generated encoder. */
    private static final FrameCodec REQUEST = new FrameCodec() {
        @Override
        public Object read(Frame frame) {
            RecordingVisitors.Requests recorded = new RecordingVisitors.Requests();
            RequestDispatch.dispatch(frame, recorded);
            return recorded.calls;
        }

        @Override
        public void write(Frame frame, ByteBuf out) {
            RequestReEncoder.encode(frame, out);
        }
    };

    /**
     * A reply other than OK as the client reads it, written by {@link ReplyEncoder}. An error's detail is cut at
     * {@link ReplyEncoder#MAX_DETAIL_CHARS}, so the value compared is the part of it that travels.
     */
    private static final FrameCodec REPLY = new FrameCodec() {
        @Override
        public Object read(Frame frame) {
            RecordingVisitors.Replies recorded = new RecordingVisitors.Replies() {
                @Override
                public void error(int requestId, VgpuException failure) {
                    String detail = failure.detail();
                    calls.add("#" + requestId + " error " + failure.code() + " "
                            + (detail.length() > ReplyEncoder.MAX_DETAIL_CHARS
                                    ? detail.substring(0, ReplyEncoder.MAX_DETAIL_CHARS) + " (cut)"
                                    : detail));
                }
            };
            ReplyDecoder.dispatch(frame, recorded);
            return recorded.calls;
        }

        @Override
        public void write(Frame frame, ByteBuf out) {
            ReplyEncoder encoder = new ReplyEncoder().wrap(out);
            ReplyDecoder.dispatch(frame, new ReplyVisitor() {
                @Override
                public void welcome(int requestId, Welcome welcome) {
                    encoder.welcome(requestId, welcome);
                }

                @Override
                public void pong(int requestId) {
                    encoder.pong(requestId);
                }

                @Override
                public void ok(int requestId, ByteBuf result) {
                    throw new AssertionError("an OK's result is round-tripped by each reader (RESULT_CODECS)");
                }

                @Override
                public void error(int requestId, VgpuException failure) {
                    encoder.error(requestId, failure);
                }

                @Override
                public void data(int requestId, boolean more, boolean failureKept, long offset, ByteBuf bytes) {
                    encoder.dataHeader(requestId, more, failureKept, offset, bytes.readableBytes());
                    out.writeBytes(bytes, bytes.readerIndex(), bytes.readableBytes());
                }
            });
        }
    };

    /** A reader of an OK's result and the encoder of the value it reads. */
    private record ResultCodec(String name, ResultReader reader, ResultWriter writer) implements FrameCodec {
        @Override
        public Object read(Frame frame) {
            return reader.read(frame.body().duplicate());
        }

        @Override
        public void write(Frame frame, ByteBuf out) {
            writer.write(new ReplyEncoder().wrap(out), frame.requestId(), read(frame));
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private interface ResultReader {
        Object read(ByteBuf result);
    }

    private interface ResultWriter {
        void write(ReplyEncoder encoder, int requestId, Object value);
    }

    /**
     * Every reader of an OK's result: those of {@link ReplyDecoder} with their {@link ReplyEncoder#ok} overloads, and
     * each of the generated {@link ResultDecoder} with the generated {@link ResultEncoder} method of its name.
     */
    private static final List<ResultCodec> RESULT_CODECS = resultCodecs();

    private static List<ResultCodec> resultCodecs() {
        List<ResultCodec> codecs = new ArrayList<>(List.of(
                new ResultCodec(
                        "memoryInfo",
                        ReplyDecoder::memoryInfo,
                        (encoder, id, value) -> encoder.ok(id, (MemoryInfo) value)),
                new ResultCodec(
                        "kernelSignature",
                        result -> ReplyDecoder.kernelSignature("k", result),
                        (encoder, id, value) -> encoder.ok(id, (KernelSignature) value)),
                new ResultCodec("empty", ReplyDecoder::empty, (encoder, id, value) -> encoder.ok(id))));
        for (Method reader : ResultDecoder.class.getMethods()) {
            if (!Modifier.isStatic(reader.getModifiers()) || reader.getDeclaringClass() != ResultDecoder.class) {
                continue;
            }
            Method writer = Arrays.stream(ResultEncoder.class.getMethods())
                    .filter(method -> method.getName().equals(reader.getName()))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("ResultEncoder has no " + reader.getName()));
            codecs.add(new ResultCodec(
                    "ResultDecoder." + reader.getName(),
                    result -> reflectively(() -> reader.invoke(null, result)),
                    (encoder, id, value) -> reflectively(() -> writer.invoke(encoder, id, value))));
        }
        return List.copyOf(codecs);
    }

    private interface Reflective {
        Object call() throws ReflectiveOperationException;
    }

    /** A reflective call's result, its target's exception thrown as it is. */
    private static Object reflectively(Reflective call) {
        try {
            return call.call();
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new AssertionError(e.getCause());
        } catch (ReflectiveOperationException e) {
            // the test's own reflection does not fit the generated classes: not a finding of the decoder
            throw new LinkageError("the generated codec is not as the fuzz test reads it", e);
        }
    }

    // ---- decoding

    /** Decodes {@code wire} as one read, then as the connection ending, dispatching and releasing each frame. */
    private static void decodeEach(Opcode.Direction direction, byte[] wire, Consumer<Frame> dispatch) {
        EmbeddedChannel channel = new EmbeddedChannel(new FrameDecoder(direction));
        try {
            channel.writeInbound(Unpooled.wrappedBuffer(wire));
        } catch (DecoderException e) {
            requireProtocolError(e.getCause());
        }
        try {
            channel.finish();
        } catch (DecoderException e) {
            requireProtocolError(e.getCause());
        }
        for (Frame frame = channel.readInbound(); frame != null; frame = channel.readInbound()) {
            Frame decoded = frame;
            try {
                protocolErrorAllowed(() -> dispatch.accept(decoded));
            } finally {
                decoded.release();
            }
        }
    }

    private static void protocolErrorAllowed(Runnable decode) {
        try {
            decode.run();
        } catch (VgpuException e) {
            requireProtocolError(e);
        }
    }

    private static void requireProtocolError(Throwable failure) {
        if (!(failure instanceof VgpuException e) || e.code() != ErrorCode.VGPU_PROTOCOL_ERROR) {
            throw new AssertionError("a decoder failed with something other than VGPU_PROTOCOL_ERROR", failure);
        }
    }
}
