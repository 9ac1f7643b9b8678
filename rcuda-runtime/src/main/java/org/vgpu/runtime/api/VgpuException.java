package org.vgpu.runtime.api;

/**
 * The one unchecked exception of vgpu. Its {@link ErrorCode} travels on the wire; the message
 * always starts with the code's name so logs and CLI output show it as a CUDA programmer expects.
 */
public class VgpuException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    private final String detail;

    public VgpuException(ErrorCode code, String detail) {
        this(code, detail, null);
    }

    public VgpuException(ErrorCode code, String detail, Throwable cause) {
        super(code.name() + ": " + detail, cause);
        this.code = code;
        this.detail = detail;
    }

    public ErrorCode code() {
        return code;
    }

    /** The message without the code prefix. */
    public String detail() {
        return detail;
    }
}
