package org.vgpu.runtime.api;

import java.util.Objects;

/**
 * A backend that passes every call to another, for test backends that change one or two answers (a
 * name, what {@link #open} returns) and keep the rest of the backend they stand in front of.
 */
public abstract class ForwardingGpuBackend implements GpuBackend {
    private final GpuBackend delegate;

    protected ForwardingGpuBackend(GpuBackend delegate) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
    }

    protected final GpuBackend delegate() {
        return delegate;
    }

    @Override
    public String name() {
        return delegate.name();
    }

    @Override
    public boolean isEmulation() {
        return delegate.isEmulation();
    }

    @Override
    public int deviceCount() {
        return delegate.deviceCount();
    }

    @Override
    public DeviceProperties deviceProperties(int device) {
        return delegate.deviceProperties(device);
    }

    @Override
    public VirtualGpu open(int device, VaWindow window) {
        return delegate.open(device, window);
    }

    @Override
    public void close() {
        delegate.close();
    }
}
