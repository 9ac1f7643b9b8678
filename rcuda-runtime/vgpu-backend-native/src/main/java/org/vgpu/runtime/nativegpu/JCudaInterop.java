package org.vgpu.runtime.nativegpu;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * Conversions between vgpu's plain addresses and MemorySegments and JCuda's pointer objects.
 *
 * <p>JCuda resolves a {@link Pointer} without a buffer to its native pointer plus its byte offset,
 * so an offset from the null pointer addresses any native memory, device or host, of any size; no
 * ByteBuffer (limited to 2 GiB) is involved.
 */
final class JCudaInterop {
    private static final Pointer NULL = new Pointer();
    private static final CUdeviceptr NULL_DEVICE = new CUdeviceptr();
    private static final MethodHandle GET_NATIVE_POINTER = findGetNativePointer();

    private JCudaInterop() {}

    static CUdeviceptr devicePointer(long address) {
        return NULL_DEVICE.withByteOffset(address);
    }

    static Pointer hostPointer(long address) {
        return NULL.withByteOffset(address);
    }

    /**
     * A JCuda pointer to the first byte of {@code host}: native segments by address; heap segments
     * through the Java array they wrap, which JCuda pins or copies for the duration of the call.
     * A read-only heap segment hides its array, so its first {@code bytes} are copied.
     */
    static Pointer hostPointer(MemorySegment host, long bytes) {
        if (host.isNative()) {
            return hostPointer(host.address());
        }
        Object array = host.heapBase().orElse(null);
        if (array == null) {
            return Pointer.to(host.asSlice(0, bytes).toArray(ValueLayout.JAVA_BYTE));
        }
        // For a heap segment, address() is the byte offset inside the array.
        long offset = host.address();
        Pointer start = switch (array) {
            case byte[] a -> Pointer.to(a);
            case short[] a -> Pointer.to(a);
            case char[] a -> Pointer.to(a);
            case int[] a -> Pointer.to(a);
            case long[] a -> Pointer.to(a);
            case float[] a -> Pointer.to(a);
            case double[] a -> Pointer.to(a);
            default ->
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        "host memory backed by " + array.getClass().getSimpleName() + " cannot be copied");
        };
        return offset == 0 ? start : start.withByteOffset(offset);
    }

    /** The driver handle inside a JCuda object (a CUfunction, say), which JCuda keeps protected. */
    static long nativeHandle(NativePointerObject object) {
        if (GET_NATIVE_POINTER == null) {
            throw new VgpuException(
                    ErrorCode.VGPU_BACKEND_UNAVAILABLE,
                    "cannot read the native handles of JCuda"
                            + " objects (NativePointerObject.getNativePointer); put JCuda on the class path");
        }
        try {
            return (long) GET_NATIVE_POINTER.invokeExact(object);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /** Null where JCuda sits in a named module that does not open its package to vgpu. */
    private static MethodHandle findGetNativePointer() {
        try {
            return MethodHandles.privateLookupIn(NativePointerObject.class, MethodHandles.lookup())
                    .findVirtual(NativePointerObject.class, "getNativePointer", MethodType.methodType(long.class));
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
