package org.vgpu.runtime.nativegpu;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The CUDA driver calls vgpu makes through Java's FFM instead of JCuda:
 * <ul>
 *   <li>the virtual memory management calls that place device memory at fixed addresses, because
 *       JCuda 12.6's {@code cuMemCreate} fails with CUDA_ERROR_INVALID_VALUE whatever it is given,
 *       while the same call through FFM with a zeroed {@code CUmemAllocationProp} works;</li>
 *   <li>{@code cuFuncGetParamInfo} and the calls that list a module's kernels (CUDA 12.4), which JCuda
 *       12.6 does not bind;</li>
 *   <li>the primary-context and pinned-host calls, whose results vgpu needs as plain addresses: the
 *       current context is compared on every call, and pinned memory becomes a MemorySegment.</li>
 * </ul>
 * libcuda is looked up once per process. Where it is missing, the class still loads (its struct
 * layouts are usable) and every call reports why the driver is unavailable.
 */
@SuppressWarnings("restricted") // binding libcuda is this class's purpose; the launcher enables native access
final class CudaDriverFfm {
    static final String LIBRARY = "libcuda.so.1";

    /**
     * Set by vgpu's {@code libcuda.so.1} on the JVM it starts inside a CUDA program (in-process serving): the handle
     * ({@code 0x} and hexadecimal) of the node's driver as the library loaded it, privately. In that process
     * {@value #LIBRARY} by name is the library itself, so the driver's functions are found through this handle.
     */
    static final String DRIVER_HANDLE_PROPERTY = "vgpu.cuda.driver-handle";

    static final int CUDA_ERROR_INVALID_VALUE = 1;
    static final int CU_MEM_ALLOCATION_TYPE_PINNED = 1;
    static final int CU_MEM_LOCATION_TYPE_DEVICE = 1;
    static final int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3;
    static final int CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0;
    static final int CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3;

    /** {@code CUmemLocation}: where memory lives. */
    static final StructLayout MEM_LOCATION =
            MemoryLayout.structLayout(JAVA_INT.withName("type"), JAVA_INT.withName("id"));

    /** {@code CUmemAllocationProp}, 32 bytes; vgpu leaves every field it does not name zero. */
    static final StructLayout ALLOCATION_PROP = MemoryLayout.structLayout(
            JAVA_INT.withName("type"),
            JAVA_INT.withName("requestedHandleTypes"),
            MEM_LOCATION.withName("location"),
            ADDRESS.withName("win32HandleMetaData"),
            MemoryLayout.sequenceLayout(8, JAVA_BYTE).withName("allocFlags"));

    /** {@code CUmemAccessDesc}, 12 bytes. */
    static final StructLayout ACCESS_DESC =
            MemoryLayout.structLayout(MEM_LOCATION.withName("location"), JAVA_INT.withName("flags"));

    private static final long PROP_TYPE = ALLOCATION_PROP.byteOffset(groupElement("type"));
    private static final long PROP_LOCATION_TYPE =
            ALLOCATION_PROP.byteOffset(groupElement("location"), groupElement("type"));
    private static final long PROP_LOCATION_ID =
            ALLOCATION_PROP.byteOffset(groupElement("location"), groupElement("id"));
    private static final long ACCESS_LOCATION_TYPE =
            ACCESS_DESC.byteOffset(groupElement("location"), groupElement("type"));
    private static final long ACCESS_LOCATION_ID = ACCESS_DESC.byteOffset(groupElement("location"), groupElement("id"));
    private static final long ACCESS_FLAGS = ACCESS_DESC.byteOffset(groupElement("flags"));

    /** The bound entry points; a record so the JIT trusts its final fields on the hot path. */
    private record Bindings(
            MethodHandle cuDeviceGet,
            MethodHandle cuDevicePrimaryCtxRetain,
            MethodHandle cuDevicePrimaryCtxRelease,
            MethodHandle cuCtxGetCurrent,
            MethodHandle cuCtxSetCurrent,
            MethodHandle cuMemAddressReserve,
            MethodHandle cuMemAddressFree,
            MethodHandle cuMemCreate,
            MethodHandle cuMemRelease,
            MethodHandle cuMemMap,
            MethodHandle cuMemUnmap,
            MethodHandle cuMemSetAccess,
            MethodHandle cuMemGetAllocationGranularity,
            MethodHandle cuMemAllocHost,
            MethodHandle cuPointerGetAttribute,
            MethodHandle cuMemFreeHost,
            MethodHandle cuFuncGetParamInfo, // null on drivers older than CUDA 12.4
            MethodHandle cuMemHostRegister,
            MethodHandle cuMemHostUnregister,
            MethodHandle cuModuleGetFunctionCount, // these three: null on drivers older than CUDA 12.4
            MethodHandle cuModuleEnumerateFunctions,
            MethodHandle cuFuncGetName) {

        static Bindings bind(SymbolLookup libcuda) {
            Linker linker = Linker.nativeLinker();
            Binder binder = new Binder(libcuda, linker);
            return new Bindings(
                    binder.required("cuDeviceGet", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT)),
                    binder.required("cuDevicePrimaryCtxRetain", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT)),
                    binder.required("cuDevicePrimaryCtxRelease_v2", FunctionDescriptor.of(JAVA_INT, JAVA_INT)),
                    // Called before every operation, so it skips the thread-state transition.
                    binder.required(
                            "cuCtxGetCurrent", FunctionDescriptor.of(JAVA_INT, ADDRESS), Linker.Option.critical(false)),
                    binder.required("cuCtxSetCurrent", FunctionDescriptor.of(JAVA_INT, ADDRESS)),
                    binder.required(
                            "cuMemAddressReserve",
                            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG)),
                    binder.required("cuMemAddressFree", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG)),
                    binder.required(
                            "cuMemCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG)),
                    binder.required("cuMemRelease", FunctionDescriptor.of(JAVA_INT, JAVA_LONG)),
                    binder.required(
                            "cuMemMap",
                            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG)),
                    binder.required("cuMemUnmap", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG)),
                    binder.required(
                            "cuMemSetAccess",
                            FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG)),
                    binder.required(
                            "cuMemGetAllocationGranularity",
                            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT)),
                    binder.required("cuMemAllocHost_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG)),
                    binder.required(
                            "cuPointerGetAttribute", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG)),
                    binder.required("cuMemFreeHost", FunctionDescriptor.of(JAVA_INT, ADDRESS)),
                    binder.optional(
                            "cuFuncGetParamInfo",
                            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, ADDRESS)),
                    binder.required(
                            "cuMemHostRegister_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT)),
                    binder.required("cuMemHostUnregister", FunctionDescriptor.of(JAVA_INT, JAVA_LONG)),
                    binder.optional("cuModuleGetFunctionCount", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS)),
                    binder.optional(
                            "cuModuleEnumerateFunctions", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS)),
                    binder.optional("cuFuncGetName", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS)));
        }
    }

    private record Binder(SymbolLookup library, Linker linker) {
        MethodHandle required(String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
            MethodHandle handle = optional(symbol, descriptor, options);
            if (handle == null) {
                throw new VgpuException(
                        ErrorCode.VGPU_BACKEND_UNAVAILABLE,
                        LIBRARY + " has no " + symbol
                                + ": the NVIDIA driver is too old for vgpu (it needs a CUDA 12 driver or newer)");
            }
            return handle;
        }

        MethodHandle optional(String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
            return library.find(symbol)
                    .map(address -> linker.downcallHandle(address, descriptor, options))
                    .orElse(null);
        }
    }

    private static final Bindings BINDINGS;
    /** Why libcuda could not be bound; null when it was. */
    private static final String UNAVAILABLE_REASON;

    static {
        Bindings bindings = null;
        String reason = null;
        try {
            bindings = Bindings.bind(driverLookup());
        } catch (IllegalArgumentException e) {
            reason = "cannot load " + LIBRARY + ", the NVIDIA driver library: no NVIDIA driver is installed on this"
                    + " machine, or it is not on the library path (" + e.getMessage() + ")";
        } catch (IllegalCallerException e) {
            reason = "native access is denied to vgpu; run java with --enable-native-access=ALL-UNNAMED ("
                    + e.getMessage() + ")";
        } catch (VgpuException e) {
            reason = e.detail();
        }
        BINDINGS = bindings;
        UNAVAILABLE_REASON = reason;
    }

    /** The node's driver: by its handle where vgpu's library hands it over, else by name on the library path. */
    private static SymbolLookup driverLookup() {
        String handle = System.getProperty(DRIVER_HANDLE_PROPERTY);
        if (handle == null) {
            return SymbolLookup.libraryLookup(LIBRARY, Arena.global());
        }
        if (!handle.startsWith("0x")) {
            throw new VgpuException(
                    ErrorCode.VGPU_BACKEND_UNAVAILABLE,
                    DRIVER_HANDLE_PROPERTY + "=" + handle + " is not a handle (0x and hexadecimal digits)");
        }
        MemorySegment library = MemorySegment.ofAddress(Long.parseUnsignedLong(handle.substring(2), 16));
        Linker linker = Linker.nativeLinker();
        MethodHandle dlsym = linker.downcallHandle(
                linker.defaultLookup()
                        .find("dlsym")
                        .orElseThrow(() ->
                                new VgpuException(ErrorCode.VGPU_BACKEND_UNAVAILABLE, "this C library has no dlsym")),
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        return name -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment found = (MemorySegment) dlsym.invokeExact(library, arena.allocateFrom(name));
                return found.equals(MemorySegment.NULL) ? Optional.empty() : Optional.of(found);
            } catch (Throwable e) { // invokeExact's own signature: dlsym itself does not fail otherwise
                throw new IllegalStateException("dlsym(" + name + ") failed", e);
            }
        };
    }

    /** The pointer-sized out-parameter of cuCtxGetCurrent, one per thread so the hot path allocates nothing. */
    private static final ThreadLocal<MemorySegment> CURRENT_CONTEXT_SLOT =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(ADDRESS));

    private CudaDriverFfm() {}

    /** Throws VGPU_BACKEND_UNAVAILABLE with the reason unless libcuda was bound. */
    static void requireAvailable() {
        bindings();
    }

    private static Bindings bindings() {
        if (BINDINGS == null) {
            throw new VgpuException(ErrorCode.VGPU_BACKEND_UNAVAILABLE, UNAVAILABLE_REASON);
        }
        return BINDINGS;
    }

    // ---- devices and contexts

    /** The CUdevice handle of device ordinal {@code ordinal}. */
    static int deviceGet(int ordinal) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment device = arena.allocate(JAVA_INT);
            int result;
            try {
                result = (int) bindings().cuDeviceGet().invokeExact(device, ordinal);
            } catch (Throwable t) {
                throw propagate(t);
            }
            CudaErrors.check(result, "cuDeviceGet(" + ordinal + ")");
            return device.get(JAVA_INT, 0);
        }
    }

    static long primaryContextRetain(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment context = arena.allocate(ADDRESS);
            int result;
            try {
                result = (int) bindings().cuDevicePrimaryCtxRetain().invokeExact(context, device);
            } catch (Throwable t) {
                throw propagate(t);
            }
            CudaErrors.check(result, "cuDevicePrimaryCtxRetain(device " + device + ")");
            return context.get(JAVA_LONG, 0);
        }
    }

    static void primaryContextRelease(int device) {
        int result;
        try {
            result = (int) bindings().cuDevicePrimaryCtxRelease().invokeExact(device);
        } catch (Throwable t) {
            throw propagate(t);
        }
        CudaErrors.check(result, "cuDevicePrimaryCtxRelease(device " + device + ")");
    }

    /** The calling thread's current context; 0 when it has none. */
    static long currentContext() {
        MemorySegment slot = CURRENT_CONTEXT_SLOT.get();
        int result;
        try {
            result = (int) bindings().cuCtxGetCurrent().invokeExact(slot);
        } catch (Throwable t) {
            throw propagate(t);
        }
        if (result != CudaErrors.CUDA_SUCCESS) {
            throw CudaErrors.failure(result, "cuCtxGetCurrent");
        }
        return slot.get(JAVA_LONG, 0);
    }

    static void setCurrentContext(long context) {
        int result;
        try {
            result = (int) bindings().cuCtxSetCurrent().invokeExact(MemorySegment.ofAddress(context));
        } catch (Throwable t) {
            throw propagate(t);
        }
        CudaErrors.check(result, String.format("cuCtxSetCurrent(0x%x)", context));
    }

    // ---- virtual memory management

    /** Reserves {@code size} bytes of device address space, asking for {@code requestedAddress}; returns what the driver gave. */
    static long addressReserve(long size, long requestedAddress) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment address = arena.allocate(JAVA_LONG);
            int result;
            try {
                result = (int) bindings().cuMemAddressReserve().invokeExact(address, size, 0L, requestedAddress, 0L);
            } catch (Throwable t) {
                throw propagate(t);
            }
            CudaErrors.check(result, String.format("cuMemAddressReserve(size 0x%x at 0x%x)", size, requestedAddress));
            return address.get(JAVA_LONG, 0);
        }
    }

    static void addressFree(long address, long size) {
        int result;
        try {
            result = (int) bindings().cuMemAddressFree().invokeExact(address, size);
        } catch (Throwable t) {
            throw propagate(t);
        }
        CudaErrors.check(result, String.format("cuMemAddressFree(0x%x, size 0x%x)", address, size));
    }

    /** Creates {@code size} bytes of physical memory on device {@code device}; returns its generic allocation handle. */
    static long memCreate(long size, int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment handle = arena.allocate(JAVA_LONG);
            MemorySegment prop = allocationProperties(arena, device);
            int result;
            try {
                result = (int) bindings().cuMemCreate().invokeExact(handle, size, prop, 0L);
            } catch (Throwable t) {
                throw propagate(t);
            }
            CudaErrors.check(result, "cuMemCreate(" + size + " bytes on device " + device + ")");
            return handle.get(JAVA_LONG, 0);
        }
    }

    static void memRelease(long handle) {
        int result;
        try {
            result = (int) bindings().cuMemRelease().invokeExact(handle);
        } catch (Throwable t) {
            throw propagate(t);
        }
        CudaErrors.check(result, String.format("cuMemRelease(handle 0x%x)", handle));
    }

    static void memMap(long address, long size, long handle) {
        int result;
        try {
            result = (int) bindings().cuMemMap().invokeExact(address, size, 0L, handle, 0L);
        } catch (Throwable t) {
            throw propagate(t);
        }
        CudaErrors.check(result, String.format("cuMemMap(0x%x, size 0x%x, handle 0x%x)", address, size, handle));
    }

    static void memUnmap(long address, long size) {
        int result;
        try {
            result = (int) bindings().cuMemUnmap().invokeExact(address, size);
        } catch (Throwable t) {
            throw propagate(t);
        }
        CudaErrors.check(result, String.format("cuMemUnmap(0x%x, size 0x%x)", address, size));
    }

    /** Lets device {@code device} read and write {@code [address, address + size)}. */
    static void memSetAccess(long address, long size, int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment access = accessDescriptor(arena, device);
            int result;
            try {
                result = (int) bindings().cuMemSetAccess().invokeExact(address, size, access, 1L);
            } catch (Throwable t) {
                throw propagate(t);
            }
            CudaErrors.check(
                    result,
                    String.format("cuMemSetAccess(0x%x, size 0x%x, device %d read-write)", address, size, device));
        }
    }

    /** The minimum granularity of physical allocations on {@code device}. */
    static long allocationGranularity(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment granularity = arena.allocate(JAVA_LONG);
            MemorySegment prop = allocationProperties(arena, device);
            int result;
            try {
                result = (int) bindings()
                        .cuMemGetAllocationGranularity()
                        .invokeExact(granularity, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
            } catch (Throwable t) {
                throw propagate(t);
            }
            CudaErrors.check(result, "cuMemGetAllocationGranularity(device " + device + ")");
            return granularity.get(JAVA_LONG, 0);
        }
    }

    /** Pinned device memory on {@code device}, no handle types, everything else zero. */
    static MemorySegment allocationProperties(SegmentAllocator allocator, int device) {
        MemorySegment prop = allocator.allocate(ALLOCATION_PROP);
        prop.fill((byte) 0);
        prop.set(JAVA_INT, PROP_TYPE, CU_MEM_ALLOCATION_TYPE_PINNED);
        prop.set(JAVA_INT, PROP_LOCATION_TYPE, CU_MEM_LOCATION_TYPE_DEVICE);
        prop.set(JAVA_INT, PROP_LOCATION_ID, device);
        return prop;
    }

    /** Read-write access for {@code device}. */
    static MemorySegment accessDescriptor(SegmentAllocator allocator, int device) {
        MemorySegment access = allocator.allocate(ACCESS_DESC);
        access.set(JAVA_INT, ACCESS_LOCATION_TYPE, CU_MEM_LOCATION_TYPE_DEVICE);
        access.set(JAVA_INT, ACCESS_LOCATION_ID, device);
        access.set(JAVA_INT, ACCESS_FLAGS, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
        return access;
    }

    // ---- pinned host memory

    /**
     * Page-locked host memory of the current context; returns its address. With unified addressing
     * (every 64-bit platform CUDA 12 supports) the driver also maps it for every device at the same
     * address, so kernels (vgpu's gather and scatter) can read and write it directly.
     */
    static long memAllocHost(long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pointer = arena.allocate(ADDRESS);
            int result;
            try {
                result = (int) bindings().cuMemAllocHost().invokeExact(pointer, bytes);
            } catch (Throwable t) {
                throw propagate(t);
            }
            CudaErrors.check(result, "cuMemAllocHost(" + bytes + " bytes)");
            return pointer.get(JAVA_LONG, 0);
        }
    }

    /**
     * The address at which a kernel of the current context reaches host memory {@code hostAddress},
     * or 0 when it cannot: memory the driver has not pinned and mapped (pageable memory, say).
     */
    static long mappedDevicePointer(long hostAddress) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pointer = arena.allocate(JAVA_LONG);
            int result;
            try {
                result = (int) bindings()
                        .cuPointerGetAttribute()
                        .invokeExact(pointer, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, hostAddress);
            } catch (Throwable t) {
                throw propagate(t);
            }
            return result == CudaErrors.CUDA_SUCCESS ? pointer.get(JAVA_LONG, 0) : 0;
        }
    }

    static void memFreeHost(long address) {
        int result;
        try {
            result = (int) bindings().cuMemFreeHost().invokeExact(MemorySegment.ofAddress(address));
        } catch (Throwable t) {
            throw propagate(t);
        }
        CudaErrors.check(result, String.format("cuMemFreeHost(0x%x)", address));
    }

    /** cuMemHostRegister's flag: the memory is page-locked for every context, not only the current one. */
    private static final int CU_MEMHOSTREGISTER_PORTABLE = 0x01;

    /**
     * Page-locks host memory this process mapped itself, for every context (portable), so the driver copies to and
     * from it by DMA as from {@link #memAllocHost}'s memory. A context must be current.
     */
    static void memHostRegister(long address, long bytes) {
        int result;
        try {
            result = (int) bindings().cuMemHostRegister().invokeExact(address, bytes, CU_MEMHOSTREGISTER_PORTABLE);
        } catch (Throwable t) {
            throw propagate(t);
        }
        CudaErrors.check(result, String.format("cuMemHostRegister(0x%x, %d bytes)", address, bytes));
    }

    static void memHostUnregister(long address) {
        int result;
        try {
            result = (int) bindings().cuMemHostUnregister().invokeExact(address);
        } catch (Throwable t) {
            throw propagate(t);
        }
        CudaErrors.check(result, String.format("cuMemHostUnregister(0x%x)", address));
    }

    // ---- functions

    /**
     * The parameter sizes of kernel {@code function} (a CUfunction handle) in declaration order, as
     * the module's metadata declares them.
     */
    static List<Integer> parameterSizes(long function, String kernelName) {
        MethodHandle getParamInfo = bindings().cuFuncGetParamInfo();
        if (getParamInfo == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_SUPPORTED,
                    "the NVIDIA driver has no cuFuncGetParamInfo"
                            + " (it needs CUDA 12.4 or newer), so the parameters of kernel " + kernelName
                            + " from a cubin cannot be checked; load the module as PTX instead");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment offset = arena.allocate(JAVA_LONG);
            MemorySegment size = arena.allocate(JAVA_LONG);
            List<Integer> sizes = new ArrayList<>();
            for (long index = 0; ; index++) {
                int result;
                try {
                    result = (int) getParamInfo.invokeExact(MemorySegment.ofAddress(function), index, offset, size);
                } catch (Throwable t) {
                    throw propagate(t);
                }
                // The driver answers CUDA_ERROR_INVALID_VALUE for the first index past the last parameter.
                if (result == CUDA_ERROR_INVALID_VALUE) {
                    return sizes;
                }
                CudaErrors.check(result, "cuFuncGetParamInfo(" + kernelName + ", parameter " + index + ")");
                sizes.add(Math.toIntExact(size.get(JAVA_LONG, 0)));
            }
        }
    }

    /**
     * The names of the kernels of {@code module} (a {@code CUmodule}), through {@code
     * cuModuleGetFunctionCount}, {@code cuModuleEnumerateFunctions} and {@code cuFuncGetName}, which
     * JCuda does not bind.
     */
    static List<String> kernelNames(long module) {
        Bindings bound = bindings();
        if (bound.cuModuleGetFunctionCount() == null
                || bound.cuModuleEnumerateFunctions() == null
                || bound.cuFuncGetName() == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_SUPPORTED,
                    "the NVIDIA driver cannot list a module's kernels (cuModuleEnumerateFunctions needs CUDA 12.4 or"
                            + " newer)");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            MemorySegment handle = MemorySegment.ofAddress(module);
            CudaErrors.check(
                    (int) bound.cuModuleGetFunctionCount().invokeExact(count, handle), "cuModuleGetFunctionCount");
            int functions = count.get(JAVA_INT, 0);
            MemorySegment listed = arena.allocate(ADDRESS, Math.max(functions, 1));
            CudaErrors.check(
                    (int) bound.cuModuleEnumerateFunctions().invokeExact(listed, functions, handle),
                    "cuModuleEnumerateFunctions");
            MemorySegment name = arena.allocate(ADDRESS);
            List<String> names = new ArrayList<>(functions);
            for (int i = 0; i < functions; i++) {
                MemorySegment function = listed.getAtIndex(ADDRESS, i);
                CudaErrors.check((int) bound.cuFuncGetName().invokeExact(name, function), "cuFuncGetName");
                names.add(name.get(ADDRESS, 0).reinterpret(Integer.MAX_VALUE).getString(0));
            }
            return names;
        } catch (Throwable t) {
            throw propagate(t);
        }
    }

    /** Downcalls throw only what the callee or the linker throws, all unchecked; anything else is a bug. */
    private static RuntimeException propagate(Throwable thrown) {
        if (thrown instanceof RuntimeException runtime) {
            return runtime;
        }
        if (thrown instanceof Error error) {
            throw error;
        }
        return new IllegalStateException("unexpected checked exception from a CUDA downcall", thrown);
    }
}
