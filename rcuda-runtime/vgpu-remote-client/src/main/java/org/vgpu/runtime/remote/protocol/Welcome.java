package org.vgpu.runtime.remote.protocol;

import java.util.Objects;

import org.vgpu.runtime.api.DeviceProperties;

/**
 * The worker's answer to an accepted {@link Hello} ({@link Opcode#WELCOME}): the protocol version the session
 * speaks (the HELLO's), the device the session got, the idle timeout after which the worker ends a silent
 * session, which tells the client how often to send keepalives, and, from version 2, its answer to an offer of
 * shared memory and to an offer of stripes (present only when the HELLO offered them).
 */
public record Welcome(
        int protocolVersion,
        String workerId,
        int idleTimeoutMillis,
        DeviceProperties device,
        SharedRegionOffer sharedRegion,
        StripeOffer stripes) {
    public Welcome {
        Objects.requireNonNull(sharedRegion, "sharedRegion");
        Objects.requireNonNull(stripes, "stripes");
    }

    /** A WELCOME that answers no offer of stripes. */
    public Welcome(
            int protocolVersion,
            String workerId,
            int idleTimeoutMillis,
            DeviceProperties device,
            SharedRegionOffer sharedRegion) {
        this(
                protocolVersion,
                workerId,
                idleTimeoutMillis,
                device,
                sharedRegion,
                StripeOffer.none(StripeOffer.NOT_ASKED));
    }

    /** A WELCOME without a shared region. */
    public Welcome(int protocolVersion, String workerId, int idleTimeoutMillis, DeviceProperties device) {
        this(protocolVersion, workerId, idleTimeoutMillis, device, SharedRegionOffer.none("not offered"));
    }
}
