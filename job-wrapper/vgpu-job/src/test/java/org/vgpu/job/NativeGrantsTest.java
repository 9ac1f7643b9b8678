package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.migration.MigrationFaults;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.client.RemoteConfig;

/**
 * On a GPU machine: Slurm's GPU index (the device minor the driver's /proc entry gives) maps to the CUDA ordinal by
 * PCI bus id, a job opens its granted GPU natively through that mapping, and a GPU not granted to it is refused.
 */
@Tag("gpu")
@Timeout(120)
class NativeGrantsTest {
    private static final Pattern MINOR = Pattern.compile("(?m)^Device Minor:\\s*(\\d+)");

    /** The driver's word for the device minor of the GPU at {@code busId}, read here without CudaOrdinals. */
    static int minorAt(String busId) throws IOException {
        List<Path> entries;
        try (Stream<Path> listed = Files.list(CudaOrdinals.NVIDIA_GPUS)) {
            entries = listed.toList();
        }
        for (Path entry : entries) {
            if (CudaOrdinals.normalized(entry.getFileName().toString()).equals(CudaOrdinals.normalized(busId))) {
                Matcher minor = MINOR.matcher(Files.readString(entry.resolve("information")));
                assertTrue(minor.find(), entry + " has no Device Minor");
                return Integer.parseInt(minor.group(1));
            }
        }
        throw new AssertionError("no entry of " + CudaOrdinals.NVIDIA_GPUS + " for bus " + busId);
    }

    @Test
    void theGrantedGpuOpensThroughItsBusIdAndAnotherIsRefused() throws IOException {
        GpuBackend probe = Backends.open("native");
        String busId = probe.pciBusId(0).orElseThrow();
        int nodeGpu = minorAt(busId);
        int notGranted = nodeGpu + 1;
        System.out.println("CUDA device 0 is at PCI " + busId + ", node GPU " + nodeGpu + " (Device Minor)");

        Map<String, String> environment = new HashMap<>();
        environment.put("VGPU_COUNT", "1");
        environment.put("VGPU_ASSEMBLY", "0=local:" + nodeGpu);
        environment.put("VGPU_LOCAL_GPUS", Integer.toString(nodeGpu));
        environment.put("VGPU_NODE", "gpu-node");
        environment.put("SLURM_JOB_ID", "42");
        JobAssembly assembly = JobAssembly.fromEnvironment(environment).orElseThrow();
        try (JobVgpus job = JobVgpus.open(
                assembly,
                new CudaOrdinals(Optional.empty(), probe, CudaOrdinals.NVIDIA_GPUS),
                probe,
                RemoteConfig.defaults(),
                report -> {},
                MigrationFaults.NONE)) {
            assertEquals(0, job.cudaOrdinal(nodeGpu));
            assertEquals("native", job.vgpus().getFirst().backendName());
            long address = job.vgpus().getFirst().memAlloc(1 << 20);
            job.vgpus().getFirst().memsetD8(address, (byte) 7, 1 << 20);
            job.vgpus().getFirst().ctxSynchronize();

            VgpuException refused = assertThrows(
                    VgpuException.class,
                    () -> job.vgpus().getFirst().migrate(new MigrationTarget.LocalGpu(notGranted)));
            System.out.println("refused: " + refused.getMessage());
            assertTrue(
                    refused.getMessage()
                            .contains("GPU " + notGranted + " of node gpu-node is not granted to job 42 (it has GPU "
                                    + nodeGpu + "); the tracker grants a freed GPU when it moves a vGPU home"),
                    refused.getMessage());
        }
    }
}
