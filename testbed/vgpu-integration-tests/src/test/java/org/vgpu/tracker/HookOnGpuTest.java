package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.file.Path;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;

/**
 * {@link HookStory} on a GPU machine, natively: n2 lends CUDA device {@code -Dvgpu.test.worker.device} (run-on-gpu.sh
 * passes the machine's last GPU), n1 owns node GPU 0 (Device Minor 0, found by PCI bus id). On a machine of two GPUs
 * the borrowed vGPU runs on GPU 1 in the worker's process and comes home onto GPU 0 in the job's, two GPUs apart; on
 * one GPU both are the same GPU in two processes. Slurm is the unit tests' stand-in here (the GPU machines have no
 * Slurm); the testbed's hook-home scenario runs the same loop on real Slurm with emulated GPUs.
 */
@Tag("gpu")
@Timeout(300)
class HookOnGpuTest {
    @TempDir
    Path dir;

    @Test
    void aGpuFreedOnTheJobsNodeTakesItsBorrowedVgpuHomeNativelyWhileTheMdRuns() throws Exception {
        int lenderDevice = Integer.getInteger("vgpu.test.worker.device", 0);
        HookStory.Told told = HookStory.tell("native", lenderDevice, dir, System.out, "hook on GPU: ");
        HookStory.assertTold(told, "native");
        GpuBackend local = Backends.open("native");
        if (local.deviceCount() >= 2 && lenderDevice != 0) {
            assertNotEquals(lenderDevice, told.homeDevice(), "with two GPUs, home is another GPU than the lender's");
        }
    }
}
