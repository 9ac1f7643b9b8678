package org.vgpu.job.jcuda;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

import jcuda.NativePointerObject;
import jcuda.Pointer;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelArg;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.VgpuException;

/**
 * Reads and writes the private fields of JCuda's pointer objects, which is how the shims give a program's {@code
 * CUdeviceptr}, {@code CUmodule}, {@code CUstream}, ... their values without JCuda's native library: a handle's native
 * pointer holds the shim's id for it, a device pointer's holds its window address. JCuda lives in the unnamed module,
 * as the shims do, so its fields are open to them.
 *
 * <p>A {@link Pointer} to host memory is what {@code Pointer.to(...)} made: a buffer (a Java array wrapped, or a
 * direct buffer, which is also what the shims' {@code cuMemAllocHost} hands out), or an array of pointers (kernel
 * parameters, or a table of device pointers a copy moves to or from the device); its byte offset counts from the
 * buffer's start.
 */
final class JCudaObjects {
    private static final VarHandle NATIVE_POINTER;
    private static final VarHandle BYTE_OFFSET;
    private static final VarHandle BUFFER;
    private static final VarHandle POINTERS;

    static {
        try {
            MethodHandles.Lookup objects =
                    MethodHandles.privateLookupIn(NativePointerObject.class, MethodHandles.lookup());
            NATIVE_POINTER = objects.findVarHandle(NativePointerObject.class, "nativePointer", long.class);
            MethodHandles.Lookup pointers = MethodHandles.privateLookupIn(Pointer.class, MethodHandles.lookup());
            BYTE_OFFSET = pointers.findVarHandle(Pointer.class, "byteOffset", long.class);
            BUFFER = pointers.findVarHandle(Pointer.class, "buffer", Buffer.class);
            POINTERS = pointers.findVarHandle(Pointer.class, "pointers", NativePointerObject[].class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError("this JCuda's pointer classes are not the ones vgpu knows: " + e);
        }
    }

    private JCudaObjects() {}

    /** The object's native pointer: a handle's id, or a device pointer's base; 0 for null. */
    static long nativePointer(NativePointerObject object) {
        return object == null ? 0 : (long) NATIVE_POINTER.get(object);
    }

    static void setNativePointer(NativePointerObject object, long value) {
        requireObject(object, "handle");
        NATIVE_POINTER.set(object, value);
    }

    /** A device pointer's address: its native pointer plus its byte offset ({@code withByteOffset}). */
    static long deviceAddress(Pointer pointer) {
        requireObject(pointer, "device pointer");
        if (BUFFER.get(pointer) != null || POINTERS.get(pointer) != null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "a host pointer (Pointer.to(...)) was given as a device pointer");
        }
        return (long) NATIVE_POINTER.get(pointer) + (long) BYTE_OFFSET.get(pointer);
    }

    /** Whether {@code pointer} is a device pointer (no buffer, no pointer array), as the runtime API's are. */
    static boolean isDevicePointer(Pointer pointer) {
        return pointer != null && BUFFER.get(pointer) == null && POINTERS.get(pointer) == null;
    }

    /** Makes {@code pointer} point to {@code memory} as {@code Pointer.to(buffer)} would (cuMemAllocHost's result). */
    static void pointTo(Pointer pointer, ByteBuffer memory) {
        requireObject(pointer, "host pointer");
        BUFFER.set(pointer, memory);
        BYTE_OFFSET.set(pointer, 0L);
        NATIVE_POINTER.set(pointer, 0L);
    }

    /** The buffer a host pointer wraps, null where it wraps none. */
    static Buffer buffer(Pointer pointer) {
        return pointer == null ? null : (Buffer) BUFFER.get(pointer);
    }

    /**
     * The first {@code bytes} of the host memory {@code pointer} points to: a heap segment of the array it wraps, or
     * a native one of its direct buffer. Anything else (a pointer array, a raw native address) is refused: vgpu
     * cannot tell a raw address from a device pointer.
     */
    static MemorySegment hostMemory(Pointer pointer, long bytes, String what) {
        requireObject(pointer, what);
        Buffer buffer = (Buffer) BUFFER.get(pointer);
        if (buffer == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    what + " must be host memory from Pointer.to(array or buffer) or cuMemAllocHost, not "
                            + (POINTERS.get(pointer) != null ? "an array of pointers" : "a raw address"));
        }
        return fromOffset(pointer, MemorySegment.ofBuffer(buffer), bytes, what);
    }

    /** Whether {@code pointer} is {@code Pointer.to(NativePointerObject...)}, an array of pointers. */
    static boolean isPointerArray(Pointer pointer) {
        return pointer != null && POINTERS.get(pointer) != null;
    }

    /**
     * What a copy to the device reads from {@code pointer}: its host memory ({@link #hostMemory}), or, for an array of
     * device pointers ({@code Pointer.to(CUdeviceptr...)}, the way JCuda programs build the pointer tables of kernels
     * taking {@code float**}), the bytes of its {@link #pointerTable} from its byte offset on.
     */
    static MemorySegment copySource(Pointer pointer, long bytes, String what) {
        requireObject(pointer, what);
        return isPointerArray(pointer)
                ? fromOffset(pointer, pointerTable(pointer, what), bytes, what)
                : hostMemory(pointer, bytes, what);
    }

    /**
     * The addresses of an array of device pointers, 8 bytes each, as JCuda hands such an array to the driver: window
     * addresses, which stay valid on any device the vGPU moves to. A null element is address 0; an element that is
     * host memory or a handle is refused, since no kernel could use what it would be.
     */
    static MemorySegment pointerTable(Pointer pointer, String what) {
        NativePointerObject[] pointers = (NativePointerObject[]) POINTERS.get(pointer);
        MemorySegment table = MemorySegment.ofArray(new long[pointers.length]);
        for (int i = 0; i < pointers.length; i++) {
            table.setAtIndex(ValueLayout.JAVA_LONG, i, tableEntry(pointers[i], i, what));
        }
        return table;
    }

    private static long tableEntry(NativePointerObject element, int index, String what) {
        if (element == null) {
            return 0;
        }
        if (!(element instanceof Pointer device) || !isDevicePointer(device)) {
            String is = element instanceof Pointer
                    ? "host memory (Pointer.to(...))"
                    : "a " + element.getClass().getSimpleName();
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    what + "'s element " + index + " is " + is
                            + ", not a device pointer: an array of pointers holds device pointers only");
        }
        return deviceAddress(device);
    }

    /**
     * After a copy from the device into the bytes of {@code table}, {@code pointer}'s {@link #pointerTable}: each
     * element whose address changed takes the new one, with byte offset 0, as JCuda writes such an array back.
     */
    static void writeBackPointers(Pointer pointer, MemorySegment table) {
        NativePointerObject[] pointers = (NativePointerObject[]) POINTERS.get(pointer);
        for (int i = 0; i < pointers.length; i++) {
            long address = table.getAtIndex(ValueLayout.JAVA_LONG, i);
            NativePointerObject element = pointers[i];
            if (element == null && address != 0) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        String.format(
                                "destination's element %d is null, and the copy gave it address 0x%x", i, address));
            }
            if (element != null && tableEntry(element, i, "destination") != address) {
                NATIVE_POINTER.set(element, address);
                BYTE_OFFSET.set(element, 0L);
            }
        }
    }

    /** {@code bytes} of {@code whole} from {@code pointer}'s byte offset on, refused where they do not fit. */
    static MemorySegment fromOffset(Pointer pointer, MemorySegment whole, long bytes, String what) {
        long offset = (long) BYTE_OFFSET.get(pointer);
        if (offset < 0 || bytes < 0 || offset + bytes > whole.byteSize()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    what + " holds " + Math.max(0, whole.byteSize() - offset) + " bytes from its offset, " + bytes
                            + " asked for");
        }
        // the usual copy of a whole array (Pointer.to(array), its length) needs no second segment
        return offset == 0 && bytes == whole.byteSize() ? whole : whole.asSlice(offset, bytes);
    }

    /** All bytes of the host memory {@code pointer} points to, from its offset to the end of its buffer. */
    static byte[] hostBytes(Pointer pointer, String what) {
        requireObject(pointer, what);
        Buffer buffer = buffer(pointer);
        long whole = buffer == null ? 0 : MemorySegment.ofBuffer(buffer).byteSize();
        return hostMemory(pointer, whole - (long) BYTE_OFFSET.get(pointer), what)
                .toArray(ValueLayout.JAVA_BYTE);
    }

    /**
     * One kernel parameter as {@code Pointer.to(...)} gives it inside the parameter array: {@code
     * Pointer.to(devicePointer)} is a device address; {@code Pointer.to(new int[] {n})} (float, long, double) is
     * that value, typed so that the emulation's twins read it as such; anything else is {@code size} raw bytes.
     *
     * @param size the parameter's size as the kernel declares it
     */
    static KernelArg kernelArgument(NativePointerObject parameter, int index, int size) {
        if (!(parameter instanceof Pointer pointer)) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "kernel parameter " + index + " must be a Pointer (Pointer.to(...)), got " + parameter);
        }
        NativePointerObject[] pointers = (NativePointerObject[]) POINTERS.get(pointer);
        if (pointers != null) {
            if (pointers.length != 1 || !(pointers[0] instanceof Pointer device) || !isDevicePointer(device)) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        "kernel parameter " + index + " must point to one value or one device pointer");
            }
            return new KernelArg.Pointer(deviceAddress(device));
        }
        MemorySegment value = hostMemory(pointer, size, "kernel parameter " + index);
        Buffer buffer = (Buffer) BUFFER.get(pointer);
        return switch (buffer) {
            case IntBuffer _
            when size == Integer.BYTES -> new KernelArg.I32(value.get(ValueLayout.JAVA_INT_UNALIGNED, 0));
            case FloatBuffer _
            when size == Float.BYTES -> new KernelArg.F32(value.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
            case LongBuffer _
            when size == Long.BYTES -> new KernelArg.I64(value.get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
            case DoubleBuffer _
            when size == Double.BYTES -> new KernelArg.F64(value.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 0));
            default -> new KernelArg.Bytes(value.toArray(ValueLayout.JAVA_BYTE));
        };
    }

    /** The elements of a kernel-parameter array ({@code Pointer.to(Pointer...)}). */
    static NativePointerObject[] parameterArray(Pointer kernelParameters) {
        if (kernelParameters == null) {
            return new NativePointerObject[0];
        }
        NativePointerObject[] pointers = (NativePointerObject[]) POINTERS.get(kernelParameters);
        if (pointers == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "kernelParams must be Pointer.to(Pointer.to(...), ...), one pointer per parameter");
        }
        return pointers;
    }

    /** The kernel's parameters, each decoded with the size the kernel declares for it. */
    static KernelArgs kernelArguments(KernelSignature signature, Pointer kernelParams) {
        NativePointerObject[] parameters = parameterArray(kernelParams);
        if (parameters.length != signature.parameterSizes().size()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "kernel " + signature.kernelName() + " takes "
                            + signature.parameterSizes().size() + " parameters, kernelParams holds "
                            + parameters.length);
        }
        KernelArg[] args = new KernelArg[parameters.length];
        for (int i = 0; i < parameters.length; i++) {
            args[i] =
                    kernelArgument(parameters[i], i, signature.parameterSizes().get(i));
        }
        return KernelArgs.of(args);
    }

    private static void requireObject(Object object, String what) {
        if (object == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, what + " is null");
        }
    }
}
