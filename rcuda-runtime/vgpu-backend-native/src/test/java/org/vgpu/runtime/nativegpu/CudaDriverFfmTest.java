package org.vgpu.runtime.nativegpu;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;

/** The C struct layouts the VMM calls take, checked against cuda.h's definitions; no GPU needed. */
class CudaDriverFfmTest {

    @Test
    void allocationPropMatchesCudaH() {
        assertEquals(32, CudaDriverFfm.ALLOCATION_PROP.byteSize());
        assertEquals(0, CudaDriverFfm.ALLOCATION_PROP.byteOffset(groupElement("type")));
        assertEquals(4, CudaDriverFfm.ALLOCATION_PROP.byteOffset(groupElement("requestedHandleTypes")));
        assertEquals(8, CudaDriverFfm.ALLOCATION_PROP.byteOffset(groupElement("location"), groupElement("type")));
        assertEquals(12, CudaDriverFfm.ALLOCATION_PROP.byteOffset(groupElement("location"), groupElement("id")));
        assertEquals(16, CudaDriverFfm.ALLOCATION_PROP.byteOffset(groupElement("win32HandleMetaData")));
        assertEquals(24, CudaDriverFfm.ALLOCATION_PROP.byteOffset(groupElement("allocFlags")));
    }

    @Test
    void accessDescMatchesCudaH() {
        assertEquals(12, CudaDriverFfm.ACCESS_DESC.byteSize());
        assertEquals(0, CudaDriverFfm.ACCESS_DESC.byteOffset(groupElement("location"), groupElement("type")));
        assertEquals(4, CudaDriverFfm.ACCESS_DESC.byteOffset(groupElement("location"), groupElement("id")));
        assertEquals(8, CudaDriverFfm.ACCESS_DESC.byteOffset(groupElement("flags")));
    }

    @Test
    void allocationPropertiesAskForPinnedDeviceMemoryAndLeaveTheRestZero() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment garbage = arena.allocate(64);
            garbage.fill((byte) 0x7f);
            MemorySegment prop = CudaDriverFfm.allocationProperties((size, alignment) -> garbage.asSlice(0, size), 3);
            assertEquals(CudaDriverFfm.CU_MEM_ALLOCATION_TYPE_PINNED, prop.get(JAVA_INT, 0));
            assertEquals(0, prop.get(JAVA_INT, 4), "no shareable handle types");
            assertEquals(CudaDriverFfm.CU_MEM_LOCATION_TYPE_DEVICE, prop.get(JAVA_INT, 8));
            assertEquals(3, prop.get(JAVA_INT, 12));
            for (int offset = 16; offset < 32; offset += 4) {
                assertEquals(0, prop.get(JAVA_INT, offset), "byte " + offset + " must be zero even in reused memory");
            }
        }
    }

    @Test
    void accessDescriptorGrantsReadWriteToTheDevice() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment access = CudaDriverFfm.accessDescriptor(arena, 2);
            assertEquals(CudaDriverFfm.CU_MEM_LOCATION_TYPE_DEVICE, access.get(JAVA_INT, 0));
            assertEquals(2, access.get(JAVA_INT, 4));
            assertEquals(CudaDriverFfm.CU_MEM_ACCESS_FLAGS_PROT_READWRITE, access.get(JAVA_INT, 8));
        }
    }
}
