package org.vgpu.tracker.ledger;

/** The ledger cannot be read or written; the message names the file (and line) and what is wrong. */
public final class LedgerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public LedgerException(String message) {
        super(message);
    }

    public LedgerException(String message, Throwable cause) {
        super(message, cause);
    }
}
