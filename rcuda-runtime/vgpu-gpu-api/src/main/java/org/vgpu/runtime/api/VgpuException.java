package org.vgpu.runtime.api;

import org.vgpu.common.error.VgpuFailure;

/**
 * The failure of a GPU call. Its {@link ErrorCode} (CUDA's names and numbers, and vgpu's own
 * {@code VGPU_*}) travels on the wire; the message always starts with the code's name so logs and
 * CLI output show it as a CUDA programmer expects. Failures outside GPU calls have types of their
 * own ({@link VgpuFailure}'s subtypes), so no configuration or network problem wears a CUDA name.
 */
public class VgpuException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    private final String detail;

    public VgpuException(ErrorCode code, String detail) {
        this(code, detail, null);
    }

    public VgpuException(ErrorCode code, String detail, Throwable cause) {
        super(code.name(), code.name() + ": " + detail, cause);
        this.code = code;
        this.detail = detail;
    }

    public ErrorCode code() {
        return code;
    }

    /** The message without the code prefix. */
    @Override
    public String detail() {
        return detail;
    }
}
