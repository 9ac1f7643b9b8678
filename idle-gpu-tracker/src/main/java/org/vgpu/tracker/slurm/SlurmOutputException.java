package org.vgpu.tracker.slurm;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * Slurm printed something this parser does not understand: another Slurm version, a truncated
 * read, or not Slurm's output at all. The message names the command and where parsing stopped.
 */
public final class SlurmOutputException extends VgpuException {
    private static final long serialVersionUID = 1L;

    public SlurmOutputException(String source, String problem) {
        super(ErrorCode.CUDA_ERROR_INVALID_VALUE, "cannot read the output of " + source + ": " + problem);
    }
}
