package org.vgpu.runtime.remote.protocol;

import java.util.function.Consumer;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import org.junit.jupiter.api.extension.ExtendWith;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * Fuzz targets for the wire decoders (docs/fuzzing.md): bytes as a peer would send them go through the
 * {@link FrameDecoder} and then the body decoders, as a worker ({@link RequestDecoder}, {@link RequestDispatch}) or a
 * client ({@link ReplyDecoder} and every reader of an OK's result) reads them. Whatever the bytes, the only failure
 * allowed is a VGPU_PROTOCOL_ERROR, which ends that one connection, and for a request also CUDA_ERROR_INVALID_VALUE,
 * which fails that request only; any other exception would end a session for the wrong reason or crash the event
 * loop. Every frame is released, so a leaked buffer fails the class (NettyLeaks). The
 * committed inputs (WireDecoderFuzzTestInputs/) are valid frames of every kind and each crash found.
 */
@ExtendWith(NettyLeaks.class)
class WireDecoderFuzzTest {
    @FuzzTest(maxDuration = "1m")
    void requests(byte[] wire) {
        decodeEach(Opcode.Direction.REQUEST, wire, frame -> {
            if (frame.opcode() == Opcode.HELLO) {
                RequestDecoder.hello(frame);
            } else {
                try {
                    RequestDispatch.dispatch(frame, new RecordingVisitors.Requests());
                } catch (VgpuException e) {
                    // A well-framed request with a value the call refuses (a launch's grid of 0) fails only that
                    // request, with CUDA_ERROR_INVALID_VALUE, and the session goes on (SessionExecutor.handle).
                    if (e.code() != ErrorCode.CUDA_ERROR_INVALID_VALUE) {
                        throw e;
                    }
                }
            }
        });
    }

    @FuzzTest(maxDuration = "1m")
    void replies(byte[] wire) {
        decodeEach(
                Opcode.Direction.REPLY,
                wire,
                frame -> ReplyDecoder.dispatch(frame, new RecordingVisitors.Replies() {
                    /** An OK's result is read by what the request expects: try every reader on the same bytes. */
                    @Override
                    public void ok(int requestId, ByteBuf result) {
                        protocolErrorAllowed(() -> ReplyDecoder.memoryInfo(result));
                        protocolErrorAllowed(() -> ReplyDecoder.kernelSignature("k", result));
                        protocolErrorAllowed(() -> ReplyDecoder.deviceRegion(result));
                        protocolErrorAllowed(() -> ReplyDecoder.int32(result));
                        protocolErrorAllowed(() -> ReplyDecoder.empty(result));
                    }
                }));
    }

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
