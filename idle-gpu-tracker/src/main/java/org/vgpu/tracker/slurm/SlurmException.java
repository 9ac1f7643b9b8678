package org.vgpu.tracker.slurm;

import org.vgpu.common.error.VgpuFailure;

/**
 * Slurm could not be asked, refused a command, or printed what the tracker cannot read. The message
 * names the command and, for output, where reading stopped; it is what an admin reads.
 */
public final class SlurmException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    /** What went wrong with Slurm. */
    public enum Code {
        /** A client command could not be run or did not finish in time: not on the PATH, slurmctld down. */
        UNREACHABLE,
        /** A command ran and failed (non-zero exit status). */
        COMMAND_FAILED,
        /** A command's output is not what this parser understands: another Slurm version, a cut read. */
        BAD_OUTPUT
    }

    private final Code code;

    private SlurmException(Code code, String message, Throwable cause) {
        super("SLURM", code, message, cause);
        this.code = code;
    }

    public static SlurmException unreachable(String message, Throwable cause) {
        return new SlurmException(Code.UNREACHABLE, message, cause);
    }

    public static SlurmException commandFailed(String message) {
        return new SlurmException(Code.COMMAND_FAILED, message, null);
    }

    /** @param source the command whose output it is, e.g. {@code scontrol show node -d} */
    public static SlurmException badOutput(String source, String problem) {
        return new SlurmException(Code.BAD_OUTPUT, "cannot read the output of " + source + ": " + problem, null);
    }

    public Code code() {
        return code;
    }
}
