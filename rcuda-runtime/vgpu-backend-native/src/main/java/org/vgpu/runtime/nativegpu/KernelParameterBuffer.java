package org.vgpu.runtime.nativegpu;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import jcuda.Pointer;

import org.vgpu.runtime.api.KernelArg;
import org.vgpu.runtime.api.KernelArgs;

/**
 * The {@code void** kernelParams} of cuLaunchKernel, built in native memory that each thread
 * reuses. cuLaunchKernel copies the argument values before it returns, so the block is free again
 * for the thread's next launch: no allocation and no per-argument JNI work on the launch path, as
 * JCuda's {@code Pointer.to(Pointer...)} would need.
 *
 * <p>Layout: {@code count} pointers, then the values, each at an 8-byte aligned offset.
 */
final class KernelParameterBuffer {
    private static final int VALUE_ALIGNMENT = 8;
    private static final ThreadLocal<KernelParameterBuffer> PER_THREAD =
            ThreadLocal.withInitial(KernelParameterBuffer::new);

    private byte[] values = new byte[256];
    private MemorySegment block = MemorySegment.NULL;
    private Pointer kernelParams;

    /** The calling thread's buffer. */
    static KernelParameterBuffer forCurrentThread() {
        return PER_THREAD.get();
    }

    /** Writes {@code args} into this thread's block; the result is valid until the thread's next call. */
    Pointer marshal(KernelArgs args) {
        int count = args.count();
        int valuesBytes = 0;
        for (KernelArg arg : args.asList()) {
            valuesBytes += align(arg.size());
        }
        long pointersBytes = (long) count * Long.BYTES;
        ensureCapacity(pointersBytes + valuesBytes, valuesBytes);
        int offset = 0;
        for (int i = 0; i < count; i++) {
            KernelArg arg = args.get(i);
            arg.writeTo(values, offset);
            block.setAtIndex(JAVA_LONG, i, block.address() + pointersBytes + offset);
            offset += align(arg.size());
        }
        MemorySegment.copy(MemorySegment.ofArray(values), 0, block, pointersBytes, valuesBytes);
        return kernelParams;
    }

    /** The native block behind the last {@link #marshal}, for tests that read it back. */
    MemorySegment block() {
        return block;
    }

    private void ensureCapacity(long blockBytes, int valuesBytes) {
        if (values.length < valuesBytes) {
            values = new byte[Math.max(valuesBytes, 2 * values.length)];
        }
        if (block.byteSize() < blockBytes) {
            // An automatic arena: the old block is reclaimed once unreachable, and the block of a dead thread with it.
            block = Arena.ofAuto().allocate(Math.max(blockBytes, 2 * block.byteSize()), VALUE_ALIGNMENT);
            kernelParams = JCudaInterop.hostPointer(block.address());
        }
    }

    private static int align(int size) {
        return (size + VALUE_ALIGNMENT - 1) & -VALUE_ALIGNMENT;
    }
}
