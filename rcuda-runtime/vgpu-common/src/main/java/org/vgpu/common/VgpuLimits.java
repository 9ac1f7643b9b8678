package org.vgpu.common;

/** Limits that more than one part of vgpu must agree on. */
public final class VgpuLimits {
    private VgpuLimits() {}

    /** vGPUs one job can have: each owns one 256 GiB address window below 64 TiB of windows. */
    public static final int MAX_VGPUS = 256;
}
