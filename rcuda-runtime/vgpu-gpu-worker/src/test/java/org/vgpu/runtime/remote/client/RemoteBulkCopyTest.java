package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.protocol.NettyLeaks;

/**
 * Bulk copies through the worker's staging slots (1 MiB, four of them) with a client chunk size
 * that does not divide into slots and a copy that runs through the slots several times and ends
 * inside one: the bytes arrive intact both ways, from and into heap and native memory at odd
 * offsets, synchronously and asynchronously. The worker shares this host, so the bytes go through the
 * shared region's eight 1 MiB slots each way, client chunks cut to a slot: a copy of more than the
 * ring holds, its sender held back until slots are free again.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
@ExtendWith(NettyLeaks.class)
class RemoteBulkCopyTest {
    /** 1.5 MiB and a bit: every other host-to-device chunk spans two slots. */
    private static final int CHUNK_BYTES = (3 << 19) + 4093;
    /** Past two turns of the slots, ending inside one. */
    private static final int COPY_BYTES = (9 << 20) + 12_345;

    private static final int ODD_OFFSET = 7;

    private InProcessWorkers workers;
    private RemoteBackend backend;
    private VirtualGpu gpu;
    private long device;
    private final byte[] data = new byte[COPY_BYTES];

    @BeforeEach
    void open() {
        workers = new InProcessWorkers(Duration.ofSeconds(10), 0);
        backend = new RemoteBackend(workers, RemoteConfig.defaults().withChunkBytes(CHUNK_BYTES), null);
        gpu = backend.open(0, VaWindow.forVgpu(0));
        device = gpu.memAlloc(COPY_BYTES);
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) (i * 31 + (i >> 20));
        }
    }

    @AfterEach
    void close() {
        gpu.close();
        backend.close();
        workers.close();
    }

    @Test
    void theBytesGoThroughTheSharedRegion() {
        assertTrue(
                ((RemoteGpu) gpu).bulkPathDescription().startsWith("same-host shared memory (8 slots of 1024 KiB"),
                ((RemoteGpu) gpu).bulkPathDescription());
    }

    @Test
    void aSynchronousCopyFromAndIntoHeapMemoryAtAnOddOffset() {
        MemorySegment source = MemorySegment.ofArray(withOddOffset(data));
        gpu.memcpyHtoD(device, source.asSlice(ODD_OFFSET), COPY_BYTES);
        byte[] back = new byte[COPY_BYTES + ODD_OFFSET];
        gpu.memcpyDtoH(MemorySegment.ofArray(back).asSlice(ODD_OFFSET), device, COPY_BYTES);
        assertArrayEquals(withOddOffset(data), back);
    }

    @Test
    void aSynchronousCopyFromAndIntoNativeMemoryAtAnOddOffset() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment source = arena.allocate(COPY_BYTES + ODD_OFFSET);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, source, ODD_OFFSET, COPY_BYTES);
            gpu.memcpyHtoD(device, source.asSlice(ODD_OFFSET), COPY_BYTES);
            MemorySegment back = arena.allocate(COPY_BYTES + ODD_OFFSET);
            gpu.memcpyDtoH(back.asSlice(ODD_OFFSET), device, COPY_BYTES);
            assertArrayEquals(data, back.asSlice(ODD_OFFSET).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void asynchronousCopiesOnAStreamIntoConfinedNativeMemoryAtAnOddOffset() {
        StreamHandle stream = gpu.streamCreate();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment source = arena.allocate(COPY_BYTES + ODD_OFFSET);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, source, ODD_OFFSET, COPY_BYTES);
            gpu.memcpyHtoDAsync(device, source.asSlice(ODD_OFFSET), COPY_BYTES, stream);
            MemorySegment back = arena.allocate(COPY_BYTES + ODD_OFFSET);
            gpu.memcpyDtoHAsync(back.asSlice(ODD_OFFSET), device, COPY_BYTES, stream);
            gpu.streamSynchronize(stream);
            assertArrayEquals(data, back.asSlice(ODD_OFFSET).toArray(ValueLayout.JAVA_BYTE));
        } finally {
            gpu.streamDestroy(stream);
        }
    }

    private static byte[] withOddOffset(byte[] bytes) {
        byte[] shifted = new byte[bytes.length + ODD_OFFSET];
        System.arraycopy(bytes, 0, shifted, ODD_OFFSET, bytes.length);
        return shifted;
    }
}
