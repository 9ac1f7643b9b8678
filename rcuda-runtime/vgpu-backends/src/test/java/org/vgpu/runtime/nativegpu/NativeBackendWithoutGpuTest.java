package org.vgpu.runtime.nativegpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;

/** On a machine without the NVIDIA driver (CI), loading the native backend is an error, not a crash. */
class NativeBackendWithoutGpuTest {

    @Test
    void loadingWithoutTheDriverSaysWhy() {
        Assumptions.assumeFalse(driverLibraryLoads(), "this machine has libcuda; the GPU tests cover it");
        VgpuException e = assertThrows(VgpuException.class, NativeBackend::load);
        assertEquals(ErrorCode.VGPU_BACKEND_UNAVAILABLE, e.code());
        assertTrue(
                e.getMessage().contains(CudaDriverFfm.LIBRARY) && e.getMessage().contains("NVIDIA driver"),
                e.getMessage());
        VgpuException again =
                assertThrows(VgpuException.class, NativeBackend::load, "a second attempt fails the same way");
        assertEquals(e.getMessage(), again.getMessage());
    }

    @Test
    void aJobWithoutTheDriverRunsOnTheEmulationUnderAuto() {
        Assumptions.assumeFalse(driverLibraryLoads(), "this machine has libcuda; the GPU tests cover it");
        try (GpuBackend local = Backends.forJob(Backends.AUTO, 2)) {
            assertTrue(local.isEmulation(), local.name());
            assertEquals(2, local.deviceCount());
        }
        assertThrows(VgpuException.class, () -> Backends.forJob(NativeBackend.NAME, 2));
    }

    @SuppressWarnings("restricted")
    private static boolean driverLibraryLoads() {
        try {
            SymbolLookup.libraryLookup(CudaDriverFfm.LIBRARY, Arena.global());
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
