package org.vgpu.runtime.remote.protocol;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.VgpuException;

/**
 * Receives decoded replies from {@link ReplyDecoder#dispatch}. Buffers passed in belong to the
 * frame: use them during the call, or retain them.
 */
public interface ReplyVisitor {

    void welcome(int requestId, Welcome welcome);

    void pong(int requestId);

    /** Success; {@code result} is laid out as the request's opcode says (read it with {@link ReplyDecoder}). */
    void ok(int requestId, ByteBuf result);

    /** Failure of request {@code requestId}, or of the session when it is 0. */
    void error(int requestId, VgpuException failure);

    /**
     * One chunk of a device-to-host copy; {@code more} is false on its last chunk, and
     * {@code failureKept} true only there, when the worker keeps an asynchronous failure.
     */
    void data(int requestId, boolean more, boolean failureKept, long offset, ByteBuf bytes);
}
