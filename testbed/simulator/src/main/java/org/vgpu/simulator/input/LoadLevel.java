package org.vgpu.simulator.input;

import java.util.Locale;

/** How busy a generated mix keeps the cluster: the GPU-seconds its jobs ask over the GPU-seconds the cluster has. */
public enum LoadLevel {
    LIGHT(0.5),
    MEDIUM(0.75),
    HEAVY(0.9);

    private final double offeredLoad;

    LoadLevel(double offeredLoad) {
        this.offeredLoad = offeredLoad;
    }

    /** The fraction of the cluster's GPU capacity the jobs offer while they arrive. */
    public double offeredLoad() {
        return offeredLoad;
    }

    /** The name the command line takes. */
    public String word() {
        return name().toLowerCase(Locale.ROOT);
    }
}
