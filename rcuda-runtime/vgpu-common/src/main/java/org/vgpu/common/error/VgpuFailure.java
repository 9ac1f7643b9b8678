package org.vgpu.common.error;

import java.io.IOException;

/**
 * A failure that vgpu reports to a person, in vgpu's own words. Each domain has its own subtype
 * and codes ({@link ConfigException}, {@link InputException}, {@link NetworkException},
 * {@link AuthException}; the tracker adds Slurm and ledger failures, the lender its
 * {@code LendingException}, the GPU API its {@code VgpuException} with CUDA's names), so a missing
 * file is never called a CUDA error. The message is what a user or admin reads: it never carries a
 * Java exception's text; the cause, kept for logs, may.
 */
public abstract class VgpuFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String codeName;

    /** @param codeName what {@link #codeName()} gives: a stable upper-case name */
    protected VgpuFailure(String codeName, String message, Throwable cause) {
        super(message, cause);
        this.codeName = codeName;
    }

    /** A failure that one of its domain's codes names: {@link #codeName()} is DOMAIN_CODE, e.g. CONFIG_MISSING. */
    protected VgpuFailure(String domain, Enum<?> code, String message, Throwable cause) {
        this(domain + "_" + code.name(), message, cause);
    }

    /** The message without any code in front of it: what a sentence can quote. */
    public String detail() {
        return getMessage();
    }

    /** A stable upper-case name of what failed (e.g. {@code CONFIG_MISSING}), for logs and reports. */
    public final String codeName() {
        return codeName;
    }

    /**
     * What a user or admin may read of any failure: a {@code VgpuFailure}'s message, an I/O
     * failure's reason in vgpu's words ({@link IoReasons}), and for anything else only that vgpu
     * failed inside, since an unexpected exception's text is for a log: a caller that meets one
     * logs it with the exception.
     */
    public static String describe(Throwable failure) {
        return switch (failure) {
            case VgpuFailure known -> known.getMessage();
            case IOException io -> IoReasons.of(io);
            case null, default -> "an unexpected internal failure";
        };
    }
}
