package org.vgpu.runtime.emulated;

/**
 * Twins of kernels that are not vgpu's own, found with {@link java.util.ServiceLoader} on the class path when the
 * emulation starts ({@code org.vgpu.runtime.Backends#emulated}): how a program of one's own, run unmodified on the
 * emulation (a JCuda program under {@code vgpu run --}), brings the Java twins of its kernels without calling vgpu.
 * A provider names its class in {@code META-INF/services/org.vgpu.runtime.emulated.KernelTwinProvider}.
 */
public interface KernelTwinProvider {
    /** Registers this provider's twins by their kernels' entry names. */
    void register(KernelTwinRegistry registry);
}
