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

    /** The device address of argument {@code index}, which must be a pointer argument. */
    public long pointer(int index) {
        return as(index, KernelArg.Pointer.class).address();
    }

    public int i32(int index) {
        return as(index, KernelArg.I32.class).value();
    }

    public long i64(int index) {
        return as(index, KernelArg.I64.class).value();
    }

    public float f32(int index) {
        return as(index, KernelArg.F32.class).value();
    }

    public double f64(int index) {
        return as(index, KernelArg.F64.class).value();
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
