package org.vgpu.runtime.nativegpu;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A retained reference to a device's primary context, the context the CUDA runtime API and most
 * libraries share, so a vGPU's memory and modules are usable by whatever else the app runs on the
 * device.
 *
 * <p>CUDA's current context is per thread and any code on the thread may change it, so every
 * operation asks the driver which context is current (a few nanoseconds through FFM) rather than
 * trusting a cache, and switches only when it differs.
 */
final class PrimaryContext implements AutoCloseable {
    private final int device;
    private final long handle;
    private final AtomicBoolean released = new AtomicBoolean();

    private PrimaryContext(int device, long handle) {
        this.device = device;
        this.handle = handle;
    }

    /** Retains the primary context of CUdevice {@code device}. */
    static PrimaryContext retain(int device) {
        return new PrimaryContext(device, CudaDriverFfm.primaryContextRetain(device));
    }

    /** Makes this context current on the calling thread unless it already is. */
    void makeCurrent() {
        if (CudaDriverFfm.currentContext() != handle) {
            CudaDriverFfm.setCurrentContext(handle);
        }
    }

    long handle() {
        return handle;
    }

    /** Drops the reference; the driver destroys the context when the last one goes. Idempotent. */
    @Override
    public void close() {
        if (released.compareAndSet(false, true)) {
            CudaDriverFfm.primaryContextRelease(device);
        }
    }
}
