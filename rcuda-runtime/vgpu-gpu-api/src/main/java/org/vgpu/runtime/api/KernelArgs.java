package org.vgpu.runtime.api;

import java.util.ArrayList;
import java.util.List;

/**
 * The typed argument list of a kernel launch. Immutable once built; build once and launch many
 * times, as with a JCuda {@code kernelParameters} pointer.
 *
 * <pre>{@code KernelArgs args = KernelArgs.builder().pointer(a).pointer(b).i32(n).build();}</pre>
 */
public final class KernelArgs {
    private static final KernelArgs NONE = new KernelArgs(List.of());

    private final List<KernelArg> args;

    private KernelArgs(List<KernelArg> args) {
        this.args = List.copyOf(args);
    }

    public static KernelArgs none() {
        return NONE;
    }

    public static KernelArgs of(KernelArg... args) {
        return new KernelArgs(List.of(args));
    }

    public static Builder builder() {
        return new Builder();
    }

    public int count() {
        return args.size();
    }

    public KernelArg get(int index) {
        return args.get(index);
    }

    public List<KernelArg> asList() {
        return args;
    }

    /*
     * Each accessor also reads an argument given only as its bytes, when they are as many as the type takes: a
     * CUDA program's launch (cuLaunchKernel's kernelParams) says the size of each parameter, never its type.
     */

    /** The device address of argument {@code index}, which must be a pointer argument (or its 8 bytes). */
    public long pointer(int index) {
        byte[] bytes = asBytes(index, 8);
        return bytes != null
                ? KernelArg.LittleEndian.getLong(bytes, 0)
                : as(index, KernelArg.Pointer.class).address();
    }

    public int i32(int index) {
        byte[] bytes = asBytes(index, 4);
        return bytes != null
                ? KernelArg.LittleEndian.getInt(bytes, 0)
                : as(index, KernelArg.I32.class).value();
    }

    public long i64(int index) {
        byte[] bytes = asBytes(index, 8);
        return bytes != null
                ? KernelArg.LittleEndian.getLong(bytes, 0)
                : as(index, KernelArg.I64.class).value();
    }

    public float f32(int index) {
        byte[] bytes = asBytes(index, 4);
        return bytes != null
                ? Float.intBitsToFloat(KernelArg.LittleEndian.getInt(bytes, 0))
                : as(index, KernelArg.F32.class).value();
    }

    public double f64(int index) {
        byte[] bytes = asBytes(index, 8);
        return bytes != null
                ? Double.longBitsToDouble(KernelArg.LittleEndian.getLong(bytes, 0))
                : as(index, KernelArg.F64.class).value();
    }

    /** Argument {@code index}'s bytes when it was given as {@code size} raw bytes; otherwise null. */
    private byte[] asBytes(int index, int size) {
        return index >= 0
                        && index < args.size()
                        && args.get(index) instanceof KernelArg.Bytes(byte[] value)
                        && value.length == size
                ? value
                : null;
    }

    private <T extends KernelArg> T as(int index, Class<T> type) {
        if (index < 0 || index >= args.size()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "kernel argument " + index + " does not exist (" + args.size() + " arguments)");
        }
        KernelArg arg = args.get(index);
        if (!type.isInstance(arg)) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "kernel argument " + index + " is " + arg.getClass().getSimpleName() + ", expected "
                            + type.getSimpleName());
        }
        return type.cast(arg);
    }

    @Override
    public String toString() {
        return args.toString();
    }

    public static final class Builder {
        private final List<KernelArg> args = new ArrayList<>();

        public Builder pointer(long deviceAddress) {
            args.add(new KernelArg.Pointer(deviceAddress));
            return this;
        }

        public Builder i32(int value) {
            args.add(new KernelArg.I32(value));
            return this;
        }

        public Builder i64(long value) {
            args.add(new KernelArg.I64(value));
            return this;
        }

        public Builder f32(float value) {
            args.add(new KernelArg.F32(value));
            return this;
        }

        public Builder f64(double value) {
            args.add(new KernelArg.F64(value));
            return this;
        }

        public Builder bytes(byte[] value) {
            args.add(new KernelArg.Bytes(value));
            return this;
        }

        public KernelArgs build() {
            return new KernelArgs(args);
        }
    }
}
