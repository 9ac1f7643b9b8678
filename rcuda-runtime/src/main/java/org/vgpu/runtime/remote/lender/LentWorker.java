package org.vgpu.runtime.remote.lender;

/**
 * A worker handed out by {@link Lender#open(int)}: the tracker connects the job to
 * {@code endpoint} and issues its session token for {@code workerId}.
 */
public record LentWorker(int device, String workerId, Endpoint endpoint) {
}
