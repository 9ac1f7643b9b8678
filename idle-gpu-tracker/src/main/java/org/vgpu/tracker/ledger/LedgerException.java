package org.vgpu.tracker.ledger;

import org.vgpu.common.error.VgpuFailure;

/** The ledger cannot be read or written; the message names the file (and line) and what is wrong. */
public final class LedgerException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    /** What is wrong with the ledger. */
    public enum Code {
        /** The file cannot be read. */
        UNREADABLE,
        /** A line of it is not a ledger record (FILE:LINE says which). */
        DAMAGED,
        /** The file cannot be written or forced to disk. */
        UNWRITABLE
    }

    private final Code code;

    public LedgerException(Code code, String message) {
        this(code, message, null);
    }

    public LedgerException(Code code, String message, Throwable cause) {
        super("LEDGER", code, message, cause);
        this.code = code;
    }

    public Code code() {
        return code;
    }
}
