package org.vgpu.bench.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The plain-socket baseline against a verifying server in this process: every mode moves the
 * bytes it says it moves, and the from/into-memory transfers carry the pattern end to end. No
 * timings are judged.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PlainSocketBaselineTest {
    private static final String HOST = "127.0.0.1";
    /** Three slices and a few bytes more: slices, the last short slice and the pattern's tail all matter. */
    private static final long ODD_BYTES = 3L * PlainSocketBaseline.CACHED_BUFFER_BYTES + 13;

    private final PlainSocketBaseline.Server server = PlainSocketBaseline.Server.verifying(HOST, 0);
    private final Arena arena = Arena.ofConfined();

    @AfterEach
    void close() {
        server.close();
        arena.close();
    }

    @Test
    void thePatternIsWhatItChecks() {
        MemorySegment memory = arena.allocate(ODD_BYTES);
        assertFalse(PlainSocketBaseline.holdsPattern(memory));
        PlainSocketBaseline.fillPattern(memory);
        assertTrue(PlainSocketBaseline.holdsPattern(memory));
        memory.set(ValueLayout.JAVA_BYTE, ODD_BYTES - 1, (byte) (memory.get(ValueLayout.JAVA_BYTE, ODD_BYTES - 1) + 1));
        assertFalse(PlainSocketBaseline.holdsPattern(memory));
        // one slice sent twice in place of the next shows too
        PlainSocketBaseline.fillPattern(memory);
        MemorySegment.copy(
                memory, 0, memory, PlainSocketBaseline.CACHED_BUFFER_BYTES, PlainSocketBaseline.CACHED_BUFFER_BYTES);
        assertFalse(PlainSocketBaseline.holdsPattern(memory));
    }

    @Test
    void sendFromMemoryDeliversThePatternIntoTheServersMemory() {
        MemorySegment from = arena.allocate(ODD_BYTES);
        PlainSocketBaseline.fillPattern(from);
        assertTrue(PlainSocketBaseline.sendFromMemoryNanos(HOST, server.port(), from) > 0);
        // again, into the memory the server kept, and then a smaller transfer into the same memory
        assertTrue(PlainSocketBaseline.sendFromMemoryNanos(HOST, server.port(), from) > 0);
        assertTrue(PlainSocketBaseline.sendFromMemoryNanos(HOST, server.port(), from.asSlice(0, 4096)) > 0);
    }

    @Test
    void aVerifyingServerRefusesBytesOtherThanThePattern() {
        MemorySegment from = arena.allocate(ODD_BYTES);
        PlainSocketBaseline.fillPattern(from);
        from.set(ValueLayout.JAVA_BYTE, 2L * PlainSocketBaseline.CACHED_BUFFER_BYTES + 7, (byte) 0x5A);
        VgpuException e = assertThrows(
                VgpuException.class, () -> PlainSocketBaseline.sendFromMemoryNanos(HOST, server.port(), from));
        assertEquals(ErrorCode.VGPU_WORKER_LOST, e.code());
        assertTrue(e.getMessage().contains("other than the pattern"), e.getMessage());
    }

    @Test
    void receiveIntoMemoryFillsItWithThePattern() {
        MemorySegment into = arena.allocate(ODD_BYTES);
        assertTrue(PlainSocketBaseline.receiveIntoMemoryNanos(HOST, server.port(), into) > 0);
        assertTrue(PlainSocketBaseline.holdsPattern(into));
        // a larger transfer after a smaller one: the server grows its memory and fills it again
        MemorySegment larger = arena.allocate(2 * ODD_BYTES);
        assertTrue(PlainSocketBaseline.receiveIntoMemoryNanos(HOST, server.port(), larger) > 0);
        assertTrue(PlainSocketBaseline.holdsPattern(larger));
    }

    @Test
    void theCachedBufferModesAndTheRoundTripStillWork() {
        assertTrue(PlainSocketBaseline.sendNanos(HOST, server.port(), ODD_BYTES) > 0);
        assertTrue(PlainSocketBaseline.receiveNanos(HOST, server.port(), ODD_BYTES) > 0);
        assertTrue(PlainSocketBaseline.roundTripNanos(HOST, server.port(), 10) > 0);
        assertTrue(PlainSocketBaseline.spinningRoundTripNanos(HOST, server.port(), 10) > 0);
    }

    @Test
    void theParallelStreamsMoveTheirSharesAndAFailedStreamFailsTheRun() {
        assertTrue(PlainSocketBaseline.parallelSendNanos(HOST, server.port(), ODD_BYTES) > 0);
        assertTrue(PlainSocketBaseline.parallelReceiveNanos(HOST, server.port(), ODD_BYTES) > 0);
        int port = server.port();
        server.close();
        assertEquals(
                ErrorCode.VGPU_WORKER_LOST,
                assertThrows(VgpuException.class, () -> PlainSocketBaseline.parallelSendNanos(HOST, port, ODD_BYTES))
                        .code());
    }

    @Test
    void theParallelStreamsFromAndIntoMemoryEachMoveTheirShareThroughARegionOfTheirOwn() {
        int streams = PlainSocketBaseline.PARALLEL_STREAMS;
        long share = 3L * PlainSocketBaseline.CACHED_BUFFER_BYTES / 2;
        // shared memory: each stream reads or writes its share on a thread of its own
        Arena shared = Arena.ofShared();
        // each share holds the pattern from its own start, which the verifying server checks in its region
        MemorySegment from = shared.allocate(streams * share);
        for (int i = 0; i < streams; i++) {
            PlainSocketBaseline.fillPattern(from.asSlice(i * share, share));
        }
        assertTrue(PlainSocketBaseline.parallelSendFromMemoryNanos(HOST, server.port(), from) > 0);
        from.set(ValueLayout.JAVA_BYTE, 5 * share + 3, (byte) 0x5A);
        assertThrows(
                VgpuException.class,
                () -> PlainSocketBaseline.parallelSendFromMemoryNanos(HOST, server.port(), from),
                "one stream's wrong byte fails the run");
        MemorySegment into = shared.allocate(streams * share);
        assertTrue(PlainSocketBaseline.parallelReceiveIntoMemoryNanos(HOST, server.port(), into) > 0);
        for (int i = 0; i < streams; i++) {
            assertTrue(PlainSocketBaseline.holdsPattern(into.asSlice(i * share, share)), "share " + i);
        }
        shared.close();
    }

    @Test
    void aClosedServerIsALostWorker() {
        int port = server.port();
        server.close();
        MemorySegment into = arena.allocate(4096);
        assertEquals(
                ErrorCode.VGPU_WORKER_LOST,
                assertThrows(VgpuException.class, () -> PlainSocketBaseline.receiveIntoMemoryNanos(HOST, port, into))
                        .code());
    }
}
