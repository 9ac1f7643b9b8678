package org.vgpu.runtime.remote.protocol;

import org.vgpu.runtime.api.DeviceProperties;

/**
 * The worker's answer to an accepted {@link Hello} ({@link Opcode#WELCOME}): the device the
 * session got, and the idle timeout after which the worker ends a silent session, which tells the
 * client how often to send keepalives.
 */
public record Welcome(int protocolVersion, String workerId, int idleTimeoutMillis, DeviceProperties device) {}
