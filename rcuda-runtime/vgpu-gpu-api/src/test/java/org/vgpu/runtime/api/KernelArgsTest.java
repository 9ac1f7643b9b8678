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

    /** A C program's launch gives each parameter's bytes, no type: they read as any type of their size. */
    @Test
    void argumentsGivenAsBytesReadAsTheTypeOfTheirSize() {
        byte[] pointer = new byte[8];
        new KernelArg.Pointer(0x1000_0000_2000L).writeTo(pointer, 0);
        byte[] count = new byte[4];
        new KernelArg.I32(-7).writeTo(count, 0);
        byte[] scale = new byte[4];
        new KernelArg.F32(2.5f).writeTo(scale, 0);
        byte[] wide = new byte[8];
        new KernelArg.F64(-0.125).writeTo(wide, 0);
        KernelArgs args = KernelArgs.of(
                new KernelArg.Bytes(pointer),
                new KernelArg.Bytes(count),
                new KernelArg.Bytes(scale),
                new KernelArg.Bytes(wide));
        assertEquals(0x1000_0000_2000L, args.pointer(0));
        assertEquals(0x1000_0000_2000L, args.i64(0));
        assertEquals(-7, args.i32(1));
        assertEquals(2.5f, args.f32(2));
        assertEquals(-0.125, args.f64(3));
        // bytes of another size are no such value
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> args.pointer(1)).code());
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                assertThrows(VgpuException.class, () -> args.i32(0)).code());
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
