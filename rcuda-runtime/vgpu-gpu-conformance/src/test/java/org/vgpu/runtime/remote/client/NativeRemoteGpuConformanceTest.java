package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;
import org.vgpu.runtime.nativegpu.NativeBackend;
import org.vgpu.runtime.workloads.Workload;
import org.vgpu.runtime.workloads.WorkloadResult;
import org.vgpu.runtime.workloads.Workloads;

/**
 * The VirtualGpu contract on the remote backend over worker processes that drive a real GPU. On a
 * machine with two or more GPUs the workers serve the last one (the lender's GPU) while this
 * process also uses GPU 0 natively (the borrower's own GPU), as a job with one local and one
 * borrowed vGPU does.
 */
@Tag("gpu")
class NativeRemoteGpuConformanceTest extends VirtualGpuConformanceTest {
    private final NativeBackend local = NativeBackend.load();

    @Override
    protected GpuBackend createBackend() {
        return new RemoteBackend(new SpawnedWorkers("native", local), RemoteConfig.defaults(), null);
    }

    @Override
    protected int device() {
        return local.deviceCount() - 1;
    }

    @Test
    void aLocalGpuAndARemoteOneRunWorkloadsAtTheSameTime() throws Exception {
        try (VirtualGpu native0 = local.open(0, VaWindow.forVgpu(9))) {
            for (Workload workload : Workloads.all()) {
                CompletableFuture<WorkloadResult> onLocal =
                        CompletableFuture.supplyAsync(() -> workload.run(native0, 4, 7));
                WorkloadResult onRemote = workload.run(gpu, 4, 7);
                WorkloadResult localResult = onLocal.get();
                assertTrue(onRemote.passed(), onRemote.toString());
                assertTrue(localResult.passed(), localResult.toString());
                assertEquals("remote", onRemote.backend());
                assertEquals("native", localResult.backend());
            }
        }
    }
}
