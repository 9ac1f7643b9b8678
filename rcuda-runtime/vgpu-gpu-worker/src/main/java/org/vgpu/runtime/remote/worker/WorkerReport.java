package org.vgpu.runtime.remote.worker;

import org.vgpu.runtime.remote.lender.WorkerLauncher;

/**
 * What a worker served in its session, for the {@code vgpu-worker served} line.
 *
 * @param calls     requests executed (a chunked copy counts once)
 * @param bytesIn   bytes received from the client, framing included
 * @param bytesOut  bytes sent to the client, framing included
 * @param busyNanos time the GPU thread spent executing requests
 * @param clean     true when the client ended the session with GOODBYE
 * @param endReason why the session ended, for the log
 */
public record WorkerReport(long calls, long bytesIn, long bytesOut, long busyNanos, boolean clean, String endReason) {

    /** This report's figures and {@code next}'s added, with {@code next}'s outcome: sessions one after another. */
    public WorkerReport plus(WorkerReport next) {
        return new WorkerReport(
                calls + next.calls,
                bytesIn + next.bytesIn,
                bytesOut + next.bytesOut,
                busyNanos + next.busyNanos,
                next.clean,
                next.endReason);
    }

    /** The line the worker prints on stdout when it is done; launchers parse it. */
    public String servedLine() {
        return WorkerLauncher.SERVED_PREFIX + "calls=" + calls + " bytes_in=" + bytesIn + " bytes_out=" + bytesOut
                + " busy_ms=" + busyNanos / 1_000_000;
    }
}
