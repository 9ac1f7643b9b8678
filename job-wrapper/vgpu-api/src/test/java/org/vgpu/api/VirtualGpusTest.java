package org.vgpu.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/** Where {@link VirtualGpus#from} finds a program's GPUs when no interposer opened them (there is no GPU where tests run). */
class VirtualGpusTest {
    @TempDir
    Path directory;

    @Test
    void outsideAJobTheProgramGetsTheLabeledCpuEmulation() {
        try (VirtualGpus gpus = VirtualGpus.from(Map.of(), Optional.empty(), Optional.empty())) {
            assertEquals(VirtualGpus.Source.CPU_EMULATION, gpus.source());
            assertEquals("CPU EMULATION", gpus.source().label());
            assertEquals(4, gpus.count());
            assertTrue(gpus.description().contains("CPU EMULATION (not a vgpu job"), gpus.description());
            for (int k = 0; k < gpus.count(); k++) {
                assertEquals(k, gpus.gpu(k).ctxGetDevice(), "CUDA device k is GPU k");
                assertTrue(gpus.gpu(k).deviceProperties().emulated());
            }
        }
    }

    @Test
    void inAJobWithoutTheInterposerItOpensTheJobsVgpusMigratableAndClosesThem() {
        Path socket = directory.resolve("agent.sock");
        Map<String, String> job = Map.of(
                "VGPU_COUNT", "2",
                "VGPU_ASSEMBLY", "0=local:0,1=local:1",
                "VGPU_LOCAL_GPUS", "0,1",
                "VGPU_AGENT_SOCKET", socket.toString(),
                "VGPU_SOURCE", "local-only-fallback",
                "SLURM_JOB_ID", "42");
        VirtualGpus gpus = VirtualGpus.from(job, Optional.empty(), Optional.empty());
        try {
            assertEquals(VirtualGpus.Source.JOB, gpus.source());
            assertEquals("job", gpus.source().label());
            assertEquals(2, gpus.count());
            assertInstanceOf(MigratableGpu.class, gpus.gpu(1));
            assertEquals(1, gpus.gpu(1).vgpuIndex());
            assertTrue(
                    gpus.description().startsWith("2 vGPUs of job 42 (2 local, 0 remote, migratable)"),
                    gpus.description());
            assertTrue(Files.exists(socket), "the migration agent listens for the job");
        } finally {
            gpus.close();
        }
        assertFalse(Files.exists(socket), "closing closes the vGPUs and the migration agent");
        gpus.close(); // a second close is harmless
    }

    @Test
    void eachRankGetsTheVgpuOfItsNumberAndMoreRanksThanGpusAreRefused() {
        try (VirtualGpus gpus = VirtualGpus.from(Map.of(), Optional.empty(), Optional.empty())) {
            for (int rank = 0; rank < 3; rank++) {
                assertSame(gpus.gpu(rank), gpus.forRank(rank, 3));
            }
            VgpuException tooMany = assertThrows(VgpuException.class, () -> gpus.forRank(0, 5));
            assertEquals(ErrorCode.VGPU_BACKEND_UNAVAILABLE, tooMany.code());
            assertTrue(
                    tooMany.getMessage()
                            .contains("5 ranks need 5 GPUs, one for each rank, and there are 4: 4 devices of"
                                    + " the CPU EMULATION"),
                    tooMany.getMessage());
            IllegalArgumentException notARank = assertThrows(IllegalArgumentException.class, () -> gpus.forRank(3, 3));
            assertEquals("rank 3 is not one of 3 ranks (0 to 2)", notARank.getMessage());
            assertThrows(IllegalArgumentException.class, () -> gpus.forRank(-1, 3));
        }
    }
}
