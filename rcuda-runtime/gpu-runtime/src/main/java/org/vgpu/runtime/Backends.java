package org.vgpu.runtime;

import java.util.List;

import org.vgpu.common.error.InputException;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.nativegpu.NativeBackend;

/** Picks a backend by name, so every command offers the same {@code --backend} choices. */
public final class Backends {
    public static final String AUTO = "auto";
    public static final List<String> CHOICES = List.of(AUTO, "native", EmulatedBackend.NAME);

    private Backends() {}

    /**
     * Opens {@code name}: "native" (the GPUs of this machine; fails with VGPU_BACKEND_UNAVAILABLE
     * when there are none), "emulated" (the CPU emulation with the test kernels' twins), or "auto"
     * (native when a GPU is present, the emulation otherwise).
     */
    public static GpuBackend open(String name) {
        return open(name, EmulatedBackend.DEFAULT_DEVICE_COUNT);
    }

    /** The same, an emulation having {@code emulatedDevices} devices (a job's: one for every GPU index of its node). */
    public static GpuBackend open(String name, int emulatedDevices) {
        return switch (name) {
            case "native" -> NativeBackend.load();
            case EmulatedBackend.NAME -> emulated(emulatedDevices);
            case AUTO -> {
                try {
                    yield NativeBackend.load();
                } catch (VgpuException noGpu) {
                    if (noGpu.code() != ErrorCode.VGPU_BACKEND_UNAVAILABLE) {
                        throw noGpu;
                    }
                    yield emulated(emulatedDevices);
                }
            }
            default -> throw new InputException("unknown backend '" + name + "', expected one of " + CHOICES);
        };
    }

    /** The CPU emulation with its default devices and the twins of the test kernels. */
    public static EmulatedBackend emulated() {
        return emulated(EmulatedBackend.DEFAULT_DEVICE_COUNT);
    }

    /** The CPU emulation with {@code devices} devices of the default memory and the test kernels' twins. */
    public static EmulatedBackend emulated(int devices) {
        return new EmulatedBackend(devices, EmulatedBackend.DEFAULT_MEMORY_PER_DEVICE, TestKernels.twins());
    }
}
