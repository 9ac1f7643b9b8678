package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.workloads.Workload;
import org.vgpu.runtime.workloads.WorkloadResult;
import org.vgpu.runtime.workloads.Workloads;

/**
 * Sixteen remote vGPUs of one app at once, each with its own worker process on this one machine
 * (the lender), spread over its emulated devices; each runs a workload, checked against its CPU
 * reference. Small sizes keep it within a two-core CI machine.
 */
class ConcurrentSessionsTest {
    private static final int SESSIONS = 16;

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void sixteenSessionsOnOneLenderEachGetTheirWorkloadRight() throws Exception {
        List<Workload> catalogue = Workloads.all();
        ExecutorService apps = Executors.newFixedThreadPool(SESSIONS);
        // Sixteen JVMs starting at once on two cores take their time to answer the first HELLO.
        RemoteConfig patient = RemoteConfig.defaults().withConnectTimeout(Duration.ofSeconds(120));
        try (RemoteBackend backend =
                new RemoteBackend(new SpawnedWorkers("emulated", Backends.emulated()), patient, null)) {
            List<Future<WorkloadResult>> results = new ArrayList<>();
            for (int k = 0; k < SESSIONS; k++) {
                int vgpu = k;
                results.add(apps.submit(() -> {
                    try (VirtualGpu gpu = backend.open(vgpu % backend.deviceCount(), VaWindow.forVgpu(vgpu))) {
                        return catalogue.get(vgpu % catalogue.size()).run(gpu, 1, 1000 + vgpu);
                    }
                }));
            }
            for (int k = 0; k < SESSIONS; k++) {
                WorkloadResult result = results.get(k).get();
                assertTrue(result.passed(), "vGPU " + k + " " + result.workload() + ": " + result.errorSummary());
                assertEquals(RemoteGpu.NAME, result.backend());
            }
        } finally {
            apps.shutdownNow();
        }
    }
}
