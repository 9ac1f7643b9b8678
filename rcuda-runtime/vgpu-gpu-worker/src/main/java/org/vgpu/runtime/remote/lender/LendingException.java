package org.vgpu.runtime.remote.lender;

import org.vgpu.common.error.VgpuFailure;

/**
 * A lender that cannot hand out a GPU worker: the device has its most lent workers, a worker
 * process did not start, or the lender is shutting down. Lending is not a GPU call, so these have
 * codes of their own rather than CUDA's; the control protocol replies with the message alone.
 */
public final class LendingException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    /** Why no worker was lent. */
    public enum Code {
        /** The device already has the most lent workers this lender hands out per device. */
        DEVICE_BUSY,
        /** A worker process exited, reported a bad endpoint or was not listening in time. */
        WORKER_NOT_STARTED,
        /** The lender is shutting down. */
        CLOSING
    }

    private final Code code;

    public LendingException(Code code, String message) {
        this(code, message, null);
    }

    public LendingException(Code code, String message, Throwable cause) {
        super("LENDING", code, message, cause);
        this.code = code;
    }

    public Code code() {
        return code;
    }
}
