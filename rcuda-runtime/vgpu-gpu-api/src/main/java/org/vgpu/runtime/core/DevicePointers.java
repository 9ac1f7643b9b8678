package org.vgpu.runtime.core;

import java.lang.foreign.MemorySegment;
import java.util.List;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.PitchedMemory;
import org.vgpu.runtime.api.PointerAttribute;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.memory.Allocation;
import org.vgpu.runtime.memory.DeviceMemory;

/**
 * What the app's device pointers point at: the checks that a range a call reads or writes lies in
 * one live allocation or module variable (CUDA_ERROR_INVALID_VALUE otherwise, naming the operand),
 * so that foreign, freed or out-of-range pointers fail instead of reaching the device, and the
 * queries of the range holding a pointer. Each check returns what the backend is given: the address
 * itself, or a module variable's own where the range lies in one.
 */
final class DevicePointers {
    private final DeviceMemory memory;
    private final ModuleGlobals globals;

    DevicePointers(DeviceMemory memory, ModuleGlobals globals) {
        this.memory = memory;
        this.globals = globals;
    }

    /**
     * The backend's address for {@code [address, address + bytes)} of device memory: a module
     * variable's own where the range lies in one, else the address itself, which must then lie in a
     * live allocation (CUDA_ERROR_INVALID_VALUE otherwise, naming {@code what}).
     */
    long deviceAddress(long address, long bytes, String what) {
        ModuleGlobals.Global global = globals.variableHolding(address, bytes);
        if (global != null) {
            return global.backendAddress() + (address - global.address());
        }
        memory.require(address, bytes, what);
        return address;
    }

    /** A copy from {@code src} to the device; returns the backend's destination address. */
    long htoD(long dst, MemorySegment src, long bytes, boolean async) {
        OperandChecks.host(src, bytes, async, "source");
        return deviceAddress(dst, bytes, "memcpyHtoD destination");
    }

    /** A copy from the device to {@code dst}; returns the backend's source address. */
    long dtoH(MemorySegment dst, long src, long bytes, boolean async) {
        OperandChecks.hostDestination(dst, bytes, async);
        return deviceAddress(src, bytes, "memcpyDtoH source");
    }

    /**
     * An asynchronous copy between {@code host}, packed, and many device regions, which must each
     * lie in a live allocation or module variable; returns the regions as an immutable copy, with
     * the backend's addresses for module variables.
     */
    List<DeviceRegion> regionCopy(String call, List<DeviceRegion> regions, MemorySegment host, boolean toHost) {
        List<DeviceRegion> copy = List.copyOf(regionsGiven(regions, call));
        long bytes = DeviceRegion.totalBytes(copy);
        if (toHost) {
            OperandChecks.hostDestination(host, bytes, true);
        } else {
            OperandChecks.host(host, bytes, true, "source");
        }
        return backendRegions(copy, call + (toHost ? " source" : " destination"));
    }

    /** {@code regions}, which {@code what} needs: CUDA_ERROR_INVALID_VALUE when they are null. */
    static List<DeviceRegion> regionsGiven(List<DeviceRegion> regions, String what) {
        if (regions == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, what + " regions are null");
        }
        return regions;
    }

    /**
     * Checks that each of {@code regions} lies in a live allocation or module variable; returns them
     * with the backend's addresses for module variables.
     */
    List<DeviceRegion> backendRegions(List<DeviceRegion> regions, String what) {
        if (regions.stream().noneMatch(region -> globals.inArea(region.address()))) {
            memory.requireAll(regions, what);
            return regions;
        }
        // a worker serves copies of module variables with these too: each region to its backend address
        return regions.stream()
                .map(region -> new DeviceRegion(deviceAddress(region.address(), region.bytes(), what), region.bytes()))
                .toList();
    }

    /**
     * A 2D copy's side: its pitch holds a row, and its rows lie in one live allocation (or module
     * variable) or in its host buffer; returns the side with the backend's device address.
     */
    PitchedMemory pitchedSide(PitchedMemory side, long widthBytes, long height, String role) {
        long extent = OperandChecks.pitchedExtent(side, widthBytes, height, role);
        switch (side) {
            case PitchedMemory.Device device -> {
                return new PitchedMemory.Device(
                        deviceAddress(device.address(), extent, "memcpy2D " + role), device.pitch());
            }
            case PitchedMemory.Host host
            when role.equals("destination") -> OperandChecks.hostDestination(host.memory(), extent, false);
            case PitchedMemory.Host host -> OperandChecks.host(host.memory(), extent, false, role);
        }
        return side;
    }

    /** A memset of {@code count} elements of {@code elementSize} bytes; returns the backend's destination address. */
    long memset(long dst, int elementSize, long count, String what) {
        OperandChecks.memset(dst, elementSize, count, what);
        return deviceAddress(dst, count * elementSize, what + " destination");
    }

    /**
     * A 2D memset of 32-bit words, whose rows lie in one live allocation (or module variable);
     * returns the backend's address of the first row.
     */
    long memsetD2D32(long dst, long pitch, long width, long height, String what) {
        return memset(dst, Integer.BYTES, OperandChecks.memsetD2D32Words(pitch, width, height, what), what);
    }

    /** {@code cuMemGetAddressRange}: the live allocation or module variable holding {@code address}. */
    DeviceRegion addressRange(long address, int vgpuIndex) {
        DeviceRegion range = rangeHolding(address);
        if (range == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_FOUND,
                    String.format(
                            "cuMemGetAddressRange: 0x%x is not inside a live allocation of vGPU %d",
                            address, vgpuIndex));
        }
        return range;
    }

    /** {@code cuPointerGetAttribute}: what {@code attribute} says of the device pointer {@code address}. */
    long pointerAttribute(PointerAttribute attribute, long address, int vgpuIndex) {
        OperandChecks.given(attribute, "cuPointerGetAttribute", "attribute");
        DeviceRegion range = rangeHolding(address);
        if (range == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    String.format(
                            "cuPointerGetAttribute: 0x%x is not inside a live allocation of vGPU %d",
                            address, vgpuIndex));
        }
        return switch (attribute) {
            case MEMORY_TYPE -> PointerAttribute.MEMORY_TYPE_DEVICE;
            case DEVICE_POINTER -> address;
            case IS_MANAGED -> 0;
            case DEVICE_ORDINAL -> vgpuIndex;
            case RANGE_START_ADDR -> range.address();
            case RANGE_SIZE -> range.bytes();
            case MAPPED -> 1;
        };
    }

    /** The live allocation or module variable holding {@code address}, as the app asked for it; null when there is none. */
    private DeviceRegion rangeHolding(long address) {
        Allocation allocation = memory.holding(address);
        if (allocation == null) {
            allocation = globals.addressHolding(address);
        }
        return allocation == null ? null : new DeviceRegion(allocation.address(), allocation.requestedBytes());
    }
}
