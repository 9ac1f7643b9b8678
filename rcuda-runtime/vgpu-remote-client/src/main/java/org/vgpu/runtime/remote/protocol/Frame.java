package org.vgpu.runtime.remote.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/**
 * One decoded frame: its header fields and its body ({@link #content()}, a retained slice of what
 * was read). Reference counted: whoever holds it last releases it, which releases the body.
 */
public final class Frame extends DefaultByteBufHolder {
    private final Opcode opcode;
    private final int flags;
    private final int requestId;

    public Frame(Opcode opcode, int flags, int requestId, ByteBuf body) {
        super(body);
        this.opcode = opcode;
        this.flags = flags;
        this.requestId = requestId;
    }

    public Opcode opcode() {
        return opcode;
    }

    public int flags() {
        return flags;
    }

    public int requestId() {
        return requestId;
    }

    public boolean isAsync() {
        return (flags & Frames.FLAG_ASYNC) != 0;
    }

    public boolean hasMore() {
        return (flags & Frames.FLAG_MORE) != 0;
    }

    public boolean failureKept() {
        return (flags & Frames.FLAG_FAILURE_KEPT) != 0;
    }

    /** Whether the chunk this frame carries lies in a shared slot its trailer names ({@link Frames#FLAG_IN_SLOT}). */
    public boolean inSlot() {
        return (flags & Frames.FLAG_IN_SLOT) != 0;
    }

    /** The body; read it with {@link RequestDispatch} or {@link ReplyDecoder}. */
    public ByteBuf body() {
        return content();
    }

    @Override
    public String toString() {
        return opcode + "#" + requestId + (isAsync() ? " async" : "") + (hasMore() ? " more" : "") + " ("
                + content().readableBytes() + " body bytes)";
    }
}
