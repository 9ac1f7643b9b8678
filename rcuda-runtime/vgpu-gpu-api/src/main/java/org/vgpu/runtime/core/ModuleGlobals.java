package org.vgpu.runtime.core;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.memory.Allocation;
import org.vgpu.runtime.memory.WindowAllocator;

/**
 * The addresses of module variables. The top of each window (1 GiB, less in a window under 2 GiB)
 * holds them, never allocations: {@code moduleGetGlobal} gives a variable an address there, so that
 * the address is the runtime's, the same on every backend and kept by a migration (which places it
 * again with {@code moduleGetGlobalAt}), while the variable itself stays where its module's code
 * reads it. Copies and memsets at such an address go to the variable; a kernel given it as a pointer
 * would fault, since nothing is mapped there.
 */
final class ModuleGlobals {

    /**
     * A module variable as the app sees it, at {@code address} in the window's globals area, and
     * where the backend keeps it: a local GPU's address in its context, a worker's window address,
     * the emulation's host memory.
     */
    record Global(long address, long bytes, long backendAddress) {
        DeviceRegion region() {
            return new DeviceRegion(address, bytes);
        }
    }

    private static final long AREA_BYTES = BridgeContract.MODULE_GLOBALS_BYTES;

    /** Module variables' addresses are 256-byte aligned, as CUDA aligns them at most. */
    private static final long ALIGNMENT = 256;

    private final VaWindow window;
    /** Hands out the variables' addresses in the globals area; null where the window is too small for one. */
    private final WindowAllocator addresses;
    /** The live module variables by their window address. */
    private final Map<Long, Global> byAddress = new ConcurrentHashMap<>();

    ModuleGlobals(VaWindow window) {
        this.window = window;
        long area = areaBytes(window);
        this.addresses = area == 0
                ? null
                : new WindowAllocator(new VaWindow(window.vgpuIndex(), window.end() - area, area), ALIGNMENT);
    }

    /** The bytes at the top of {@code window} kept for module variables, which allocations never take. */
    static long areaBytes(VaWindow window) {
        return Math.min(AREA_BYTES, window.size() / 2 / VaWindow.GRANULARITY * VaWindow.GRANULARITY);
    }

    /**
     * Variable {@code name}'s window address: the one it already has (as CUDA answers the same
     * address each time), or a new one, first fit in the globals area or at {@code at}, for the
     * variable {@code lookup} finds in the backend's module. Serialised per module, so that two
     * threads asking at once get one address.
     */
    <M> DeviceRegion place(LoadedModule<M> loaded, String name, Long at, Function<M, DeviceRegion> lookup) {
        synchronized (loaded) {
            Global known = loaded.globals().get(name);
            if (known != null) {
                if (at != null && known.address() != at) {
                    throw new VgpuException(
                            ErrorCode.CUDA_ERROR_INVALID_VALUE,
                            String.format(
                                    "module variable %s already has address 0x%x, not 0x%x",
                                    name, known.address(), at));
                }
                return known.region();
            }
            DeviceRegion backend = lookup.apply(loaded.module());
            if (addresses == null) {
                throw new VgpuException(
                        ErrorCode.VGPU_WINDOW_FULL, "window " + window + " is too small for module variables");
            }
            long address = (at == null
                            ? addresses.allocate(backend.bytes())
                            : addresses.allocateAt(at, backend.bytes()))
                    .address();
            Global global = new Global(address, backend.bytes(), backend.address());
            loaded.globals().put(name, global);
            byAddress.put(address, global);
            return global.region();
        }
    }

    /** Gives back the addresses of the module's variables, as its unload does. */
    void forget(LoadedModule<?> module) {
        synchronized (module) {
            for (Global global : module.globals().values()) {
                byAddress.remove(global.address());
                addresses.release(global.address());
            }
            module.globals().clear();
        }
    }

    /** Whether {@code address} lies in the globals area, where only module variables live. */
    boolean inArea(long address) {
        return addresses != null && address >= addresses.window().base();
    }

    /** The live variable that holds all of {@code [address, address + bytes)}; null when none does. */
    Global variableHolding(long address, long bytes) {
        if (!inArea(address)) {
            return null;
        }
        Allocation placed = addresses.holding(address);
        Global global = placed == null ? null : byAddress.get(placed.address());
        return global != null && placed.contains(address, bytes) ? global : null;
    }

    /** The globals area's allocation of the variable holding {@code address}; null when there is none. */
    Allocation addressHolding(long address) {
        return addresses == null ? null : addresses.holding(address);
    }
}
