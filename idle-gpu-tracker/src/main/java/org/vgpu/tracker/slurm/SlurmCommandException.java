package org.vgpu.tracker.slurm;

/** A Slurm command failed, timed out or printed what the tracker cannot read. */
public final class SlurmCommandException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SlurmCommandException(String message) {
        super(message);
    }

    public SlurmCommandException(String message, Throwable cause) {
        super(message, cause);
    }
}
