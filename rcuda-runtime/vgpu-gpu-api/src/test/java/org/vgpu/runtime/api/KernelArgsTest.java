package org.vgpu.runtime.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class KernelArgsTest {
    @Test
    void typedAccessorsReturnWhatWasBuilt() {
        KernelArgs args = KernelArgs.builder()
                .pointer(0x1000_0000_0000L)
                .i32(-3)
                .i64(1L << 40)
                .f32(1.5f)
                .f64(-2.25)
                .build();
        assertEquals(5, args.count());
        assertEquals(0x1000_0000_0000L, args.pointer(0));
        assertEquals(-3, args.i32(1));
        assertEquals(1L << 40, args.i64(2));
        assertEquals(1.5f, args.f32(3));
        assertEquals(-2.25, args.f64(4));
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> args.i32(0)).code());
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> args.f32(5)).code());
    }

    @Test
    void argumentsSerializeLittleEndian() {
        byte[] out = new byte[12];
        new KernelArg.I32(0x01020304).writeTo(out, 0);
        new KernelArg.Pointer(0x1122334455667788L).writeTo(out, 4);
        assertArrayEquals(new byte[] {4, 3, 2, 1, (byte) 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}, out);
    }

    @Test
    void bytesArgumentsAreCopiedDefensively() {
        byte[] raw = {1, 2, 3};
        KernelArg.Bytes arg = new KernelArg.Bytes(raw);
        raw[0] = 9;
        assertEquals(1, arg.value()[0]);
    }
}
