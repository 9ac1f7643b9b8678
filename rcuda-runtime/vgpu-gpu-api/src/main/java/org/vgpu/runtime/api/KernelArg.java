package org.vgpu.runtime.api;

/** One typed kernel argument; its {@link #size()} must equal the size of the kernel's parameter. */
public sealed interface KernelArg {

    /** Size in bytes as the kernel sees it. */
    int size();

    /** Writes the argument's bytes (little endian, as on the GPU) into {@code out} at {@code offset}. */
    void writeTo(byte[] out, int offset);

    record Pointer(long address) implements KernelArg {
        @Override
        public int size() {
            return 8;
        }

        @Override
        public void writeTo(byte[] out, int offset) {
            LittleEndian.putLong(out, offset, address);
        }
    }

    record I32(int value) implements KernelArg {
        @Override
        public int size() {
            return 4;
        }

        @Override
        public void writeTo(byte[] out, int offset) {
            LittleEndian.putInt(out, offset, value);
        }
    }

    record I64(long value) implements KernelArg {
        @Override
        public int size() {
            return 8;
        }

        @Override
        public void writeTo(byte[] out, int offset) {
            LittleEndian.putLong(out, offset, value);
        }
    }

    record F32(float value) implements KernelArg {
        @Override
        public int size() {
            return 4;
        }

        @Override
        public void writeTo(byte[] out, int offset) {
            LittleEndian.putInt(out, offset, Float.floatToRawIntBits(value));
        }
    }

    record F64(double value) implements KernelArg {
        @Override
        public int size() {
            return 8;
        }

        @Override
        public void writeTo(byte[] out, int offset) {
            LittleEndian.putLong(out, offset, Double.doubleToRawLongBits(value));
        }
    }

    /** A by-value struct or any other raw parameter, passed byte for byte. */
    record Bytes(byte[] value) implements KernelArg {
        public Bytes {
            value = value.clone();
        }

        @Override
        public int size() {
            return value.length;
        }

        @Override
        public void writeTo(byte[] out, int offset) {
            System.arraycopy(value, 0, out, offset, value.length);
        }

        @Override
        public byte[] value() {
            return value.clone();
        }
    }

    /** Little-endian stores and loads without a ByteBuffer per argument. */
    final class LittleEndian {
        private LittleEndian() {}

        static void putInt(byte[] out, int offset, int v) {
            for (int i = 0; i < 4; i++) {
                out[offset + i] = (byte) (v >>> (8 * i));
            }
        }

        static void putLong(byte[] out, int offset, long v) {
            for (int i = 0; i < 8; i++) {
                out[offset + i] = (byte) (v >>> (8 * i));
            }
        }

        static int getInt(byte[] in, int offset) {
            int v = 0;
            for (int i = 0; i < 4; i++) {
                v |= (in[offset + i] & 0xFF) << (8 * i);
            }
            return v;
        }

        static long getLong(byte[] in, int offset) {
            long v = 0;
            for (int i = 0; i < 8; i++) {
                v |= (in[offset + i] & 0xFFL) << (8 * i);
            }
            return v;
        }
    }
}
