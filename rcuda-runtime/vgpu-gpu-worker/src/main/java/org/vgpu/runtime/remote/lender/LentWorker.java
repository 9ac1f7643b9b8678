package org.vgpu.runtime.remote.lender;

import org.vgpu.common.net.Endpoint;

/**
 * A worker handed out by {@link Lender#open(int)}: the tracker connects the job to
 * {@code endpoint} and issues its session token for {@code workerId}.
 */
public record LentWorker(int device, String workerId, Endpoint endpoint) {}
