package org.vgpu.runtime;

import java.util.List;
import java.util.ServiceLoader;
import java.util.function.Supplier;

import org.vgpu.common.error.InputException;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.emulated.KernelTwinProvider;
import org.vgpu.runtime.emulated.KernelTwinRegistry;
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

    /** The same, an emulation having {@code emulatedDevices} devices. */
    public static GpuBackend open(String name, int emulatedDevices) {
        return select(name, emulatedDevices, NativeBackend::load, false);
    }

    /**
     * The local backend of a vgpu job ({@code vgpu run}): as {@link #open}, except where the NVIDIA driver is
     * present but sees no device, see {@link #select}.
     *
     * @param emulatedDevices the emulation's devices: one for every GPU index of the job's node
     */
    public static GpuBackend forJob(String name, int emulatedDevices) {
        return select(name, emulatedDevices, NativeBackend::load, true);
    }

    /**
     * The one place that decides which backend a name means.
     *
     * <p>For a job, "auto" and "native" with the driver present but no device seen give a {@link
     * DeferredNativeBackend}, not the emulation or a failure: under ConstrainDevices a job that starts with all its
     * vGPUs borrowed has every GPU of its node refused by its device cgroup, so cuInit says no device; the tracker
     * may grant it a GPU later, the cgroup then admits it, and a cuInit retried in the same process succeeds
     * (docs/gpu-grants.md). Falling back to the emulation would make that GPU impossible to drive natively.
     * Where the driver library is absent nothing can change while the job runs, so "auto" means the emulation.
     *
     * @param loader     {@link NativeBackend#load}; tests give a stand-in (there is no GPU where they run)
     * @param job        whether this is a job's local backend, which defers instead of failing on "no device"
     */
    static GpuBackend select(String name, int emulatedDevices, Supplier<? extends GpuBackend> loader, boolean job) {
        if (name.equals(EmulatedBackend.NAME)) {
            return emulated(emulatedDevices);
        }
        if (!name.equals(AUTO) && !name.equals(NativeBackend.NAME)) {
            throw new InputException("unknown backend '" + name + "', expected one of " + CHOICES);
        }
        try {
            return loader.get();
        } catch (VgpuException unavailable) {
            if (unavailable.code() != ErrorCode.VGPU_BACKEND_UNAVAILABLE) {
                throw unavailable;
            }
            if (job && unavailable instanceof NativeBackend.NoDeviceSeen) {
                return new DeferredNativeBackend(loader, unavailable.detail());
            }
            if (name.equals(NativeBackend.NAME)) {
                throw unavailable;
            }
            return emulated(emulatedDevices);
        }
    }

    /** The CPU emulation with its default devices and the twins of the test kernels. */
    public static EmulatedBackend emulated() {
        return emulated(EmulatedBackend.DEFAULT_DEVICE_COUNT);
    }

    /**
     * The CPU emulation with {@code devices} devices of the default memory, the test kernels' twins and those of every
     * {@link KernelTwinProvider} on the class path.
     */
    public static EmulatedBackend emulated(int devices) {
        KernelTwinRegistry twins = TestKernels.twins();
        ServiceLoader.load(KernelTwinProvider.class).forEach(provider -> provider.register(twins));
        return new EmulatedBackend(devices, EmulatedBackend.DEFAULT_MEMORY_PER_DEVICE, twins);
    }
}
