package org.vgpu.runtime.nativegpu;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;

/**
 * A vGPU's whole virtual-address window, reserved (without backing) at exactly its fixed base, so
 * that every allocation can be mapped at the address the window allocator chose.
 */
final class WindowReservation implements AutoCloseable {
    private final VaWindow window;
    private boolean freed;

    private WindowReservation(VaWindow window) {
        this.window = window;
    }

    /**
     * Reserves {@code window}. The driver treats the requested address as a hint; any other address
     * is useless to vgpu, so it is given back and VGPU_WINDOW_UNAVAILABLE names both addresses; a
     * refusal by the driver is VGPU_WINDOW_UNAVAILABLE too, with the driver's error.
     */
    static WindowReservation reserve(VaWindow window) {
        long granted;
        try {
            granted = CudaDriverFfm.addressReserve(window.size(), window.base());
        } catch (VgpuException e) {
            throw new VgpuException(ErrorCode.VGPU_WINDOW_UNAVAILABLE, window + ": " + e.getMessage(), e);
        }
        if (granted != window.base()) {
            CudaDriverFfm.addressFree(granted, window.size());
            throw new VgpuException(
                    ErrorCode.VGPU_WINDOW_UNAVAILABLE,
                    String.format(
                            "%s: asked the driver for"
                                    + " 0x%x, it reserved 0x%x instead (part of the range is taken in this process)",
                            window, window.base(), granted));
        }
        return new WindowReservation(window);
    }

    /** Frees the reservation; every mapping inside it must be gone. Idempotent. */
    @Override
    public synchronized void close() {
        if (!freed) {
            freed = true;
            CudaDriverFfm.addressFree(window.base(), window.size());
        }
    }
}
