package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.transport.HostRegionFile;

/** The launcher's page-locked host memory shared with its program: made, checked, registered, bounded and freed. */
class SharedHostRegionsTest {
    @TempDir
    Path directory;

    /** The emulation, noting what it is asked to page-lock and to release. */
    private static final class RecordingBackend extends HostOnlyBackend {
        final List<MemorySegment> registered = new ArrayList<>();
        final List<MemorySegment> unregistered = new ArrayList<>();

        @Override
        public boolean hostRegister(MemorySegment host) {
            registered.add(host);
            return true;
        }

        @Override
        public void hostUnregister(MemorySegment host) {
            unregistered.add(host);
        }
    }

    private final RecordingBackend backend = new RecordingBackend();
    private final Object session = new Object();

    private SharedHostRegions regions(long bound) {
        return SharedHostRegions.in(directory, bound, backend);
    }

    /** Maps a region's file as the program's library does, checking its header. */
    private static MemorySegment mapAsTheProgram(SharedHostRegions.Grant grant, Arena arena) throws IOException {
        try (FileChannel channel = FileChannel.open(grant.file(), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_WRITE, 0, channel.size(), arena);
            assertEquals(HostRegionFile.MAGIC, mapping.get(ValueLayout.JAVA_INT_UNALIGNED, 0));
            assertEquals(grant.nonce(), mapping.get(ValueLayout.JAVA_LONG_UNALIGNED, HostRegionFile.NONCE_OFFSET));
            return mapping.asSlice(HostRegionFile.HEADER_BYTES);
        }
    }

    @Test
    void aRegionIsOneMemoryForBothProcessesAndRegisteredWithTheBackend() throws IOException {
        try (SharedHostRegions regions = regions(1 << 20);
                Arena arena = Arena.ofConfined()) {
            SharedHostRegions.Grant grant = regions.create(10_000, session);
            assertEquals(PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(grant.file()));
            MemorySegment program = mapAsTheProgram(grant, arena);
            assertEquals(12_288, program.byteSize(), "whole pages");
            program.asSlice(4096, 3).copyFrom(MemorySegment.ofArray(new byte[] {7, 8, 9}));
            byte[] seen = new byte[3];
            regions.use(
                    grant.id(),
                    4096,
                    3,
                    launcher -> MemorySegment.copy(launcher, 0, MemorySegment.ofArray(seen), 0, 3));
            assertArrayEquals(new byte[] {7, 8, 9}, seen);
            regions.use(grant.id(), 0, 2, launcher -> launcher.fill((byte) 5));
            assertEquals(5, program.get(ValueLayout.JAVA_BYTE, 1));
            assertEquals(1, backend.registered.size());
            assertEquals(12_288, backend.registered.get(0).byteSize());
            assertEquals(12_288, regions.heldBytes());

            regions.free(grant.id());
            assertEquals(List.of(backend.registered.get(0)), backend.unregistered);
            assertFalse(Files.exists(grant.file()), "a file the program never unlinked is removed at the free");
            assertEquals(0, regions.heldBytes());
        }
    }

    @Test
    void aBadRegionOffsetOrLengthIsRefusedNamingIt() {
        try (SharedHostRegions regions = regions(1 << 20)) {
            int id = regions.create(4096, session).id();
            List<long[]> bad = List.of(
                    new long[] {-1, 1},
                    new long[] {0, 4097},
                    new long[] {4096, 1},
                    new long[] {1, Long.MAX_VALUE},
                    new long[] {4097, 0},
                    new long[] {0, -1});
            for (long[] range : bad) {
                VgpuException refused =
                        assertThrows(VgpuException.class, () -> regions.use(id, range[0], range[1], segment -> {}));
                assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, refused.code());
                assertTrue(
                        refused.getMessage().contains("outside shared host region " + id + " of 4096 bytes"),
                        refused.getMessage());
            }
            regions.use(id, 4096, 0, segment -> assertEquals(0, segment.byteSize()));
            VgpuException unknown = assertThrows(VgpuException.class, () -> regions.use(id + 1, 0, 1, segment -> {}));
            assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, unknown.code());
            assertTrue(unknown.getMessage().contains("no shared host region " + (id + 1)), unknown.getMessage());
            assertThrows(VgpuException.class, () -> regions.free(id + 1));
            regions.free(id);
            VgpuException freed = assertThrows(VgpuException.class, () -> regions.use(id, 0, 1, segment -> {}));
            assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, freed.code());
            assertThrows(VgpuException.class, () -> regions.free(id), "a second free");
        }
    }

    @Test
    void pastTheBoundARegionIsOutOfMemoryAndAFreeMakesRoom() {
        try (SharedHostRegions regions = regions(3 * 4096)) {
            int first = regions.create(8192, session).id();
            VgpuException refused = assertThrows(VgpuException.class, () -> regions.create(4097, session));
            assertEquals(ErrorCode.CUDA_ERROR_OUT_OF_MEMORY, refused.code());
            assertTrue(refused.getMessage().contains("bound of 12288 bytes"), refused.getMessage());
            regions.create(4096, session);
            regions.free(first);
            regions.create(8192, session);
            assertEquals(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    assertThrows(VgpuException.class, () -> regions.create(0, session))
                            .code());
        }
    }

    @Test
    void aRegionFreedWhileACopyUsesItIsUnmappedWhenTheCopyEnds() {
        try (SharedHostRegions regions = regions(1 << 20)) {
            int id = regions.create(4096, session).id();
            regions.use(id, 0, 4096, segment -> {
                regions.free(id);
                assertTrue(backend.unregistered.isEmpty(), "still in use");
                segment.fill((byte) 1); // still mapped
            });
            assertEquals(1, backend.unregistered.size());
        }
    }

    @Test
    void aSessionsEndFreesWhatItMadeAndNoOtherSessions() {
        try (SharedHostRegions regions = regions(1 << 20)) {
            Object other = new Object();
            int mine = regions.create(4096, session).id();
            int theirs = regions.create(4096, other).id();
            regions.freeAllOf(session);
            assertThrows(VgpuException.class, () -> regions.use(mine, 0, 1, segment -> {}));
            regions.use(theirs, 0, 1, segment -> {});
            assertEquals(4096, regions.heldBytes());
        }
    }

    @Test
    void withoutSharedMemoryARegionIsNotSupportedSayingWhy() {
        SharedHostRegions none = SharedHostRegions.none("the worker serves over TCP");
        VgpuException refused = assertThrows(VgpuException.class, () -> none.create(4096, session));
        assertEquals(ErrorCode.CUDA_ERROR_NOT_SUPPORTED, refused.code());
        assertTrue(refused.getMessage().contains("the worker serves over TCP"), refused.getMessage());
        assertEquals(0, none.boundBytes());
    }

    @Test
    void aRegionTheBackendCannotLockIsStillShared() throws IOException {
        HostOnlyBackend refusing = new HostOnlyBackend() {
            @Override
            public boolean hostRegister(MemorySegment host) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_OUT_OF_MEMORY, "the driver cannot lock more");
            }
        };
        try (SharedHostRegions regions = SharedHostRegions.in(directory, 1 << 20, refusing);
                Arena arena = Arena.ofConfined()) {
            SharedHostRegions.Grant grant = regions.create(4096, session);
            mapAsTheProgram(grant, arena).set(ValueLayout.JAVA_BYTE, 0, (byte) 3);
            regions.use(grant.id(), 0, 1, segment -> assertEquals(3, segment.get(ValueLayout.JAVA_BYTE, 0)));
            regions.free(grant.id());
        }
    }

    /** A backend of which the regions use only the host registration, which a test replaces. */
    private static class HostOnlyBackend implements GpuBackend {
        @Override
        public String name() {
            return "host-only";
        }

        @Override
        public boolean isEmulation() {
            return true;
        }

        @Override
        public int deviceCount() {
            return 0;
        }

        @Override
        public DeviceProperties deviceProperties(int device) {
            throw new UnsupportedOperationException("no devices");
        }

        @Override
        public VirtualGpu open(int device, VaWindow window) {
            throw new UnsupportedOperationException("no devices");
        }
    }
}
