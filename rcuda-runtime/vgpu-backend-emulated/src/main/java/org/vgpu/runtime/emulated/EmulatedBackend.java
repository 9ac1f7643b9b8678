package org.vgpu.runtime.emulated;

import java.util.concurrent.atomic.AtomicLong;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * CPU emulation of GPUs, so that CI and laptops without a GPU run everything. It is NOT a GPU:
 * device memory is host memory, kernels are Java twins, and every device it shows says so. It
 * never stands in for a claim about GPU behaviour or speed.
 *
 * <p>Each emulated device has a fixed memory size; allocations of all vGPUs opened on it count
 * against it, so out-of-memory behaves as on a GPU.
 */
public final class EmulatedBackend implements GpuBackend {
    public static final String NAME = "emulated";
    /** Default device memory: small enough for a CI machine, large enough for the demo workloads. */
    public static final long DEFAULT_MEMORY_PER_DEVICE = 4L << 30;

    public static final int DEFAULT_DEVICE_COUNT = 4;

    private final long memoryPerDevice;
    private final KernelTwinRegistry twins;
    private final AtomicLong[] usedBytes;

    public EmulatedBackend(int deviceCount, long memoryPerDevice, KernelTwinRegistry twins) {
        if (deviceCount < 1) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE, "emulated device count must be >= 1, got " + deviceCount);
        }
        if (memoryPerDevice < VaWindow.GRANULARITY) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "emulated device memory must be >= " + VaWindow.GRANULARITY + " bytes, got " + memoryPerDevice);
        }
        this.memoryPerDevice = memoryPerDevice;
        this.twins = twins;
        this.usedBytes = new AtomicLong[deviceCount];
        for (int i = 0; i < deviceCount; i++) {
            usedBytes[i] = new AtomicLong();
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean isEmulation() {
        return true;
    }

    @Override
    public int deviceCount() {
        return usedBytes.length;
    }

    @Override
    public DeviceProperties deviceProperties(int device) {
        checkDevice(device);
        return new DeviceProperties(
                "vgpu CPU emulation #" + device,
                memoryPerDevice,
                8,
                0,
                Runtime.getRuntime().availableProcessors(),
                1024,
                32,
                true);
    }

    @Override
    public VirtualGpu open(int device, VaWindow window) {
        checkDevice(device);
        return new EmulatedGpu(window, deviceProperties(device), usedBytes[device], twins);
    }

    private void checkDevice(int device) {
        if (device < 0 || device >= usedBytes.length) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_DEVICE,
                    "emulated device " + device + " does not exist (" + usedBytes.length + " emulated devices)");
        }
    }
}
