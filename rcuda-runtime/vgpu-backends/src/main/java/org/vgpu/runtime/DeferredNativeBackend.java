package org.vgpu.runtime;

import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.nativegpu.NativeBackend;

/**
 * The native backend of a job that started with no GPU of its node admitted (all its vGPUs borrowed, every GPU
 * refused by its device cgroup): the NVIDIA driver is there but sees no device yet. It loads the native backend on
 * first use and asks again ({@link NativeBackend#load}, which retries cuInit) whenever the job counts its devices or
 * opens one, until the driver sees a GPU: the one the tracker granted, once the cgroup admits it. A failed cuInit is
 * not sticky (docs/gpu-grants.md), so the same process then drives that GPU natively.
 *
 * <p>Until then it has no device: {@link #deviceCount} is 0, {@link #pciBusId} empty, and {@link #open} says that no
 * GPU of the node is admitted yet. Once loaded it is the loaded backend.
 */
public final class DeferredNativeBackend implements GpuBackend {
    /** What opening a GPU says before the driver sees one; the job's other refusals say it alike. */
    public static final String NONE_ADMITTED = "no GPU of this node is admitted to this job yet";

    private final Supplier<? extends GpuBackend> loader;
    private GpuBackend loaded; // guarded by this
    /** The host memory registered with this backend, and whether the loaded backend page-locked it; guarded by this. */
    private final Map<MemorySegment, Boolean> hostRegions = new LinkedHashMap<>();

    private String whyNone; // guarded by this

    /**
     * @param loader  {@link NativeBackend#load} (tests give a stand-in: there is no GPU where they run)
     * @param whyNone why the first load saw no device
     */
    public DeferredNativeBackend(Supplier<? extends GpuBackend> loader, String whyNone) {
        this.loader = Objects.requireNonNull(loader, "loader");
        this.whyNone = whyNone;
    }

    /** Whether the driver has seen a device yet (the backend is loaded). */
    public synchronized boolean loaded() {
        return loaded != null;
    }

    /** The loaded backend, loading it now if the driver sees a device; empty while it sees none. */
    private synchronized Optional<GpuBackend> attempt() {
        if (loaded == null) {
            try {
                loaded = loader.get();
                hostRegions.replaceAll((host, registered) -> loaded.hostRegister(host));
            } catch (VgpuException e) {
                if (e.code() != ErrorCode.VGPU_BACKEND_UNAVAILABLE) {
                    throw e;
                }
                whyNone = e.detail();
            }
        }
        return Optional.ofNullable(loaded);
    }

    private synchronized Optional<GpuBackend> current() {
        return Optional.ofNullable(loaded);
    }

    @Override
    public String name() {
        return current().map(GpuBackend::name).orElse(NativeBackend.NAME);
    }

    @Override
    public boolean isEmulation() {
        return current().map(GpuBackend::isEmulation).orElse(false);
    }

    @Override
    public int deviceCount() {
        return attempt().map(GpuBackend::deviceCount).orElse(0);
    }

    @Override
    public DeviceProperties deviceProperties(int device) {
        return attempt().orElseThrow(() -> noDevice(device)).deviceProperties(device);
    }

    @Override
    public Optional<String> pciBusId(int device) {
        return current().flatMap(backend -> backend.pciBusId(device));
    }

    /**
     * Registered with the native backend now if it is loaded, else when it loads: host memory a program shares with
     * the launcher is page-locked for a vGPU that comes home to a GPU granted after it was made.
     */
    @Override
    public synchronized boolean hostRegister(MemorySegment host) {
        boolean registered = loaded != null && loaded.hostRegister(host);
        hostRegions.put(host, registered);
        return registered;
    }

    @Override
    public synchronized void hostUnregister(MemorySegment host) {
        if (Boolean.TRUE.equals(hostRegions.remove(host))) {
            loaded.hostUnregister(host);
        }
    }

    @Override
    public VirtualGpu open(int device, VaWindow window) {
        return attempt().orElseThrow(() -> noDevice(device)).open(device, window);
    }

    private synchronized VgpuException noDevice(int device) {
        return new VgpuException(
                ErrorCode.VGPU_BACKEND_UNAVAILABLE,
                "GPU " + device + " cannot be opened: no GPU of this node is admitted to this job yet (" + whyNone
                        + "); a GPU the tracker grants is driven natively once the job's device cgroup admits it");
    }

    @Override
    public void close() {
        current().ifPresent(GpuBackend::close);
    }
}
