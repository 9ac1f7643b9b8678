package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;

/** Slurm's GPU index to this process's CUDA ordinal, against a fake /proc/driver/nvidia/gpus tree. */
class CudaOrdinalsTest {
    @TempDir
    Path proc;

    /** A native-like backend whose ordinals have these PCI bus ids, as cuDeviceGetPCIBusId writes them. */
    private static GpuBackend gpusAt(String... busIds) {
        return new GpuBackend() {
            @Override
            public String name() {
                return "native";
            }

            @Override
            public boolean isEmulation() {
                return false;
            }

            @Override
            public int deviceCount() {
                return busIds.length;
            }

            @Override
            public DeviceProperties deviceProperties(int device) {
                throw new UnsupportedOperationException();
            }

            @Override
            public Optional<String> pciBusId(int device) {
                return Optional.of(busIds[device]);
            }

            @Override
            public VirtualGpu open(int device, VaWindow window) {
                throw new UnsupportedOperationException();
            }
        };
    }

    /** The driver's entry of one GPU, its directory named by bus id as the driver names it. */
    private void driverGpu(String busId, int minor) throws IOException {
        Path directory = Files.createDirectories(proc.resolve(busId));
        Files.writeString(
                directory.resolve("information"),
                "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 180\nGPU UUID: \t GPU-0f\nVideo BIOS: \t ??.??.??.??.??\n"
                        + "Bus Type: \t PCIe\nDMA Size: \t 52 bits\nDevice Minor: \t " + minor + "\n"
                        + "GPU Excluded:\t No\n");
    }

    /** Four GPUs whose minors do not follow the bus order, as happens when a node's GPUs were renumbered. */
    private void fourGpus() throws IOException {
        driverGpu("0000:1b:00.0", 0);
        driverGpu("0000:3b:00.0", 2);
        driverGpu("0000:5e:00.0", 1);
        driverGpu("0000:86:00.0", 3);
    }

    @Test
    void aNativeBackendMapsByPciBusIdWhateverCudaVisibleDevicesSays() throws IOException {
        fourGpus();
        // CUDA's order here: 3b, 1b, 86, 5e (upper case, as cuDeviceGetPCIBusId writes them)
        GpuBackend backend = gpusAt("0000:3B:00.0", "0000:1B:00.0", "0000:86:00.0", "0000:5E:00.0");
        for (Optional<String> visible : List.of(Optional.<String>empty(), Optional.of("0,1,2,3"))) {
            CudaOrdinals ordinals = new CudaOrdinals(visible, backend, proc);
            assertEquals(1, ordinals.ordinalOf(0));
            assertEquals(3, ordinals.ordinalOf(1));
            assertEquals(0, ordinals.ordinalOf(2));
            assertEquals(2, ordinals.ordinalOf(3));
        }
    }

    @Test
    void aGpuCudaDoesNotShowIsRefusedNamingWhatItShows() throws IOException {
        fourGpus();
        CudaOrdinals ordinals = new CudaOrdinals(Optional.of("0,2"), gpusAt("0000:1b:00.0", "00000000:3b:00.0"), proc);
        assertEquals(1, ordinals.ordinalOf(2), "an eight-digit domain is the same bus");
        VgpuException e = assertThrows(VgpuException.class, () -> ordinals.ordinalOf(3));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_DEVICE, e.code());
        assertEquals(
                "GPU 3 of this node is not among the GPUs CUDA shows this process (CUDA device 0 is GPU 0, CUDA device 1"
                        + " is GPU 2); CUDA_VISIBLE_DEVICES is '0,2'",
                e.detail());
    }

    @Test
    void withoutTheDriversDirectoryCudaVisibleDevicesGivesTheOrdinalByPosition() {
        Path missing = proc.resolve("nowhere");
        CudaOrdinals ordinals = new CudaOrdinals(Optional.of("3,1"), gpusAt("0000:1b:00.0", "0000:3b:00.0"), missing);
        assertEquals(0, ordinals.ordinalOf(3));
        assertEquals(1, ordinals.ordinalOf(1));
        VgpuException e = assertThrows(VgpuException.class, () -> ordinals.ordinalOf(2));
        assertEquals(
                "GPU 2 of this node is not in CUDA_VISIBLE_DEVICES ('3,1'), so CUDA does not show it to this process",
                e.detail());
    }

    @Test
    void whenNothingTellsTheMappingTheErrorSaysWhy() {
        Path missing = proc.resolve("nowhere");
        VgpuException unset = assertThrows(
                VgpuException.class,
                () -> new CudaOrdinals(Optional.empty(), gpusAt("0000:1b:00.0"), missing).ordinalOf(0));
        assertTrue(
                unset.detail()
                        .startsWith(
                                "which CUDA device is GPU 0 of this node cannot be told: CUDA_VISIBLE_DEVICES is not"
                                        + " set and " + missing + " cannot be read"),
                unset.detail());
        VgpuException uuids = assertThrows(
                VgpuException.class,
                () -> new CudaOrdinals(Optional.of("GPU-0f,GPU-1e"), gpusAt("0000:1b:00.0"), missing).ordinalOf(0));
        assertTrue(
                uuids.detail().startsWith("CUDA_VISIBLE_DEVICES names GPUs by UUID ('GPU-0f,GPU-1e') and "),
                uuids.detail());
    }

    @Test
    void aNativeBackendThatSeesNoGpuYetSaysNoneIsAdmittedWhateverTheEnvironmentSays() throws IOException {
        fourGpus();
        for (Optional<String> visible : List.of(Optional.<String>empty(), Optional.of("0,1,2,3"))) {
            VgpuException e =
                    assertThrows(VgpuException.class, () -> new CudaOrdinals(visible, gpusAt(), proc).ordinalOf(2));
            assertEquals(ErrorCode.CUDA_ERROR_INVALID_DEVICE, e.code());
            assertEquals(
                    "GPU 2 of this node cannot be driven: no GPU of this node is admitted to this job yet (the native"
                            + " backend sees no device)",
                    e.detail());
        }
    }

    @Test
    void aDriverDirectoryWithoutMinorsFallsBackToThePosition() throws IOException {
        Files.createDirectories(proc.resolve("0000:1b:00.0"));
        Files.writeString(proc.resolve("0000:1b:00.0").resolve("information"), "Model: something else\n");
        assertEquals(0, new CudaOrdinals(Optional.of("5"), gpusAt("0000:1b:00.0"), proc).ordinalOf(5));
    }

    @Test
    void onTheEmulationGpuIndexIsTheDeviceUnlessCudaVisibleDevicesListsGpus() {
        EmulatedBackend emulation = new EmulatedBackend(4, 1L << 30, TestKernels.twins());
        CudaOrdinals identity = new CudaOrdinals(Optional.empty(), emulation, proc);
        assertEquals(3, identity.ordinalOf(3));
        VgpuException beyond = assertThrows(VgpuException.class, () -> identity.ordinalOf(4));
        assertEquals(
                "the CPU emulation's device 4 drives GPU 4 of this node, but the emulated backend has 4 device(s)",
                beyond.detail());
        assertEquals(0, new CudaOrdinals(Optional.of("2"), emulation, proc).ordinalOf(2));
    }

    @Test
    void busIdsAreComparedByValue() {
        assertEquals("0000:3b:00.0", CudaOrdinals.normalized("00000000:3B:00.0"));
        assertEquals("0000:3b:00.0", CudaOrdinals.normalized("3b:00.0"));
        assertEquals("0001:00:1f.7", CudaOrdinals.normalized("0001:00:1F.7"));
        assertEquals("", CudaOrdinals.normalized("GPU-0f"));
    }
}
