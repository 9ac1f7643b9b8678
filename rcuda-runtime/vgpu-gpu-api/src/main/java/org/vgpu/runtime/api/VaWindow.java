package org.vgpu.runtime.api;

import org.vgpu.common.VgpuLimits;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.security.SessionToken;

/**
 * The fixed virtual-address range of one vGPU. Every allocation of vGPU k lies inside window k on
 * every backend, so a migration can map the same addresses on its target and device pointers stay
 * valid (DESIGN.md, "Virtual-address windows make migration safe").
 *
 * <p>The default base 0x1000_0000_0000 (16 TiB) was honored by the driver on H200s in fresh
 * processes; 256 GiB per vGPU leaves room for the largest GPUs and keeps 100 windows under 42 TiB.
 * The SPANK bridge hands jobs their window base, so these numbers are the bridge contract's
 * (slurm-spank-bridge/contract/limits.conf).
 */
public record VaWindow(int vgpuIndex, long base, long size) {
    public static final long DEFAULT_BASE = BridgeContract.WINDOW_BASE_DEFAULT;
    public static final long DEFAULT_SIZE = BridgeContract.WINDOW_BYTES;
    /** Allocation granularity of the CUDA VMM API on current NVIDIA GPUs (2 MiB); every backend uses it. */
    public static final long GRANULARITY = BridgeContract.WINDOW_ALIGNMENT;

    public static final int MAX_VGPUS = VgpuLimits.MAX_VGPUS;

    public VaWindow {
        if (vgpuIndex < 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "vGPU index must be >= 0, got " + vgpuIndex);
        }
        if (base <= 0
                || base % GRANULARITY != 0
                || size <= 0
                || size % GRANULARITY != 0
                || base + size < base
                || base + size > BridgeContract.ADDRESS_LIMIT) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    String.format(
                            "window 0x%x + 0x%x must be %d-aligned and inside the 47-bit user address space",
                            base, size, GRANULARITY));
        }
    }

    /** Window k of the default layout: {@code DEFAULT_BASE + k * DEFAULT_SIZE}. */
    public static VaWindow forVgpu(int k) {
        if (k < 0 || k >= MAX_VGPUS) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE, "vGPU index must be in [0, " + MAX_VGPUS + "), got " + k);
        }
        return new VaWindow(k, DEFAULT_BASE + k * DEFAULT_SIZE, DEFAULT_SIZE);
    }

    public long end() {
        return base + size;
    }

    /** This window as a session token names it: a token must grant exactly this to open it on a worker. */
    public SessionToken.Window tokenWindow() {
        return new SessionToken.Window(vgpuIndex, base, size);
    }

    public boolean contains(long address, long bytes) {
        return address >= base && bytes >= 0 && address + bytes <= end() && address + bytes >= address;
    }

    @Override
    public String toString() {
        return SessionToken.Window.describe(vgpuIndex, base, size);
    }
}
