package org.vgpu.migration;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * A migration that failed and was rolled back: the vGPU still runs on its source, its data intact.
 * The code is the failure's own (e.g. VGPU_WINDOW_UNAVAILABLE, CUDA_ERROR_OUT_OF_MEMORY,
 * VGPU_WORKER_LOST), so the caller can tell a full target from a dead one.
 */
public final class MigrationException extends VgpuException {
    private static final long serialVersionUID = 1L;

    private final transient MigrationReport report;

    MigrationException(ErrorCode code, MigrationReport report, Throwable cause) {
        super(code, report.summary(), cause);
        this.report = report;
    }

    public MigrationReport report() {
        return report;
    }

    public MigrationStep failedStep() {
        return report.failedStep();
    }
}
