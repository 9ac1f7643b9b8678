package org.vgpu.runtime.emulated;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/** Kernel twins by kernel entry name (the PTX {@code .entry} name, so kernels are {@code extern "C"}). */
public final class KernelTwinRegistry {
    private final Map<String, KernelTwin> twins = new ConcurrentHashMap<>();

    public KernelTwinRegistry register(String kernelName, KernelTwin twin) {
        twins.put(kernelName, twin);
        return this;
    }

    public boolean has(String kernelName) {
        return twins.containsKey(kernelName);
    }

    public Set<String> names() {
        return Set.copyOf(twins.keySet());
    }

    /** The twin of {@code kernelName}; VGPU_NO_KERNEL_TWIN names the kernel and says this is emulation. */
    public KernelTwin require(String kernelName) {
        KernelTwin twin = twins.get(kernelName);
        if (twin == null) {
            throw new VgpuException(
                    ErrorCode.VGPU_NO_KERNEL_TWIN,
                    "CPU emulation cannot run kernel '" + kernelName
                            + "': it has no Java twin registered (emulation runs registered twins, not PTX)");
        }
        return twin;
    }
}
