package org.vgpu.runtime.nativegpu;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.KernelArgs;

/** The void** kernelParams block, read back as the driver reads it; no GPU needed. */
class KernelParameterBufferTest {

    @Test
    void eachPointerAddressesItsArgumentsBytes() {
        KernelArgs args = KernelArgs.builder()
                .pointer(0x1000_0020_0000L)
                .i32(-7)
                .f32(2.5f)
                .bytes(new byte[] {1, 2, 3})
                .f64(-0.125)
                .i64(Long.MIN_VALUE + 1)
                .build();
        KernelParameterBuffer buffer = KernelParameterBuffer.forCurrentThread();
        buffer.marshal(args);
        MemorySegment all = buffer.block();
        assertEquals(0x1000_0020_0000L, value(all, 0).get(JAVA_LONG_UNALIGNED, 0));
        assertEquals(-7, value(all, 1).get(JAVA_INT_UNALIGNED, 0));
        assertEquals(2.5f, value(all, 2).get(JAVA_FLOAT_UNALIGNED, 0));
        assertArrayEquals(new byte[] {1, 2, 3}, value(all, 3).asSlice(0, 3).toArray(JAVA_BYTE));
        assertEquals(-0.125, value(all, 4).get(JAVA_DOUBLE_UNALIGNED, 0));
        assertEquals(Long.MIN_VALUE + 1, value(all, 5).get(JAVA_LONG_UNALIGNED, 0));
        for (int i = 0; i < args.count(); i++) {
            assertEquals(0, all.getAtIndex(JAVA_LONG, i) % 8, "argument " + i + " is 8-byte aligned");
        }
    }

    @Test
    void theBlockGrowsForLargeArgumentsAndIsReused() {
        KernelParameterBuffer buffer = KernelParameterBuffer.forCurrentThread();
        byte[] large = new byte[4000];
        large[3999] = 42;
        buffer.marshal(KernelArgs.builder().bytes(large).i32(5).build());
        MemorySegment grown = buffer.block();
        assertEquals(42, value(grown, 0).get(JAVA_BYTE, 3999));
        assertEquals(5, value(grown, 1).get(JAVA_INT_UNALIGNED, 0));
        buffer.marshal(KernelArgs.builder().i32(1).build());
        assertEquals(grown.address(), buffer.block().address(), "a smaller launch reuses the block");
    }

    @Test
    void threadsHaveTheirOwnBuffers() throws Exception {
        KernelParameterBuffer mine = KernelParameterBuffer.forCurrentThread();
        KernelParameterBuffer theirs = CompletableFuture.supplyAsync(KernelParameterBuffer::forCurrentThread)
                .get();
        assertNotSame(mine, theirs);
        assertTrue(mine == KernelParameterBuffer.forCurrentThread());
    }

    /** The bytes kernelParams[index] points to, as the driver would follow the pointer. */
    private static MemorySegment value(MemorySegment block, int index) {
        long address = block.getAtIndex(JAVA_LONG, index);
        return block.asSlice(address - block.address());
    }
}
