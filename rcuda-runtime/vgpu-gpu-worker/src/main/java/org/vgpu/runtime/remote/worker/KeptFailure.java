package org.vgpu.runtime.remote.worker;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;

/**
 * The first failure among a session's asynchronous requests, which get no reply on success: it is
 * kept and answered to the next synchronizing request instead of executing it, as CUDA reports an
 * earlier asynchronous error at the next synchronizing call. GPU thread only.
 */
final class KeptFailure {
    private final ReplyBatcher replies;
    private VgpuException kept;

    KeptFailure(ReplyBatcher replies) {
        this.replies = replies;
    }

    /** A synchronizing request reports the kept failure instead of running; true when it did. */
    boolean answeredWithKeptFailure(Frame frame) {
        if (frame.isAsync() || !frame.opcode().synchronizing() || kept == null) {
            return false;
        }
        replies.reply().error(frame.requestId(), take());
        return true;
    }

    /** A request failed: answered when synchronous, else kept unless an earlier failure is. */
    void failed(Frame frame, RuntimeException e) {
        VgpuException failure = asVgpuException(e);
        if (!frame.isAsync()) {
            replies.reply().error(frame.requestId(), failure);
        } else if (kept == null) {
            kept = new VgpuException(
                    failure.code(),
                    "asynchronous " + frame.opcode() + " (request " + frame.requestId() + ") failed: "
                            + failure.detail(),
                    failure);
        }
    }

    boolean isKept() {
        return kept != null;
    }

    /** The kept failure, no longer kept; null when there is none. */
    VgpuException take() {
        VgpuException failure = kept;
        kept = null;
        return failure;
    }

    static VgpuException asVgpuException(RuntimeException e) {
        return e instanceof VgpuException v
                ? v
                : new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "the worker failed: " + VgpuFailure.describe(e), e);
    }
}
