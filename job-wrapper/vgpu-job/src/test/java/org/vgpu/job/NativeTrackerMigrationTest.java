package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.migration.MigrationReport;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.lender.LaunchedWorker;
import org.vgpu.runtime.remote.lender.WorkerLauncher;
import org.vgpu.runtime.remote.lender.WorkerSpec;

/**
 * On a GPU machine: a job whose only vGPU is borrowed from a native worker process, and a tracker on the agent
 * channel whose mac'd {@code migrate 0 local:N} grants node GPU N (CUDA device 0's Device Minor) and brings the vGPU
 * home onto it, its data intact; before the grant, the same move asked by a user is refused.
 */
@Tag("gpu")
@Timeout(300)
class NativeTrackerMigrationTest {
    private static final int BYTES = 16 << 20;

    @Test
    void theTrackersCommandBringsABorrowedVgpuHomeOntoTheGrantedGpu() throws Exception {
        List<MigrationReport> reports = new CopyOnWriteArrayList<>();
        try (ThrowawaySiteKey siteKey = ThrowawaySiteKey.create("vgpu-native-tracker");
                LaunchedWorker worker = new WorkerLauncher()
                        .launch(new WorkerSpec(
                                new Endpoint("127.0.0.1", 0),
                                "native",
                                Integer.getInteger("vgpu.test.worker.device", 0),
                                "lender-native",
                                siteKey.keyFile()));
                FakeTracker tracker = new FakeTracker();
                Arena arena = Arena.ofConfined()) {
            String endpoint = worker.endpoint().toString();
            String token = siteKey.issuer().issue("42", 0, worker.workerId(), Duration.ofMinutes(10));
            Map<String, String> environment = new HashMap<>();
            environment.put("VGPU_COUNT", "1");
            environment.put("VGPU_ASSEMBLY", "0=remote:" + endpoint);
            environment.put("VGPU_LOCAL_GPUS", "");
            environment.put("VGPU_REMOTE", "0@" + endpoint + "#" + token);
            environment.put("VGPU_NODE", "gpu-node");
            environment.put("VGPU_TRACKER", tracker.address());
            environment.put("SLURM_JOB_ID", "42");
            GpuBackend local = Backends.open("native");
            int nodeGpu = NativeGrantsTest.minorAt(local.pciBusId(0).orElseThrow());
            JobAssembly assembly = JobAssembly.fromEnvironment(environment).orElseThrow();
            try (JobVgpus job = JobVgpus.open(
                    assembly,
                    new CudaOrdinals(Optional.empty(), local, CudaOrdinals.NVIDIA_GPUS),
                    local,
                    RemoteConfig.defaults(),
                    reports::add,
                    MigrationFaults.NONE)) {
                MigratableGpu vgpu = job.vgpus().getFirst();
                byte[] bytes = new byte[BYTES];
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] = (byte) (i * 7 + (i >> 16));
                }
                MemorySegment host = arena.allocate(BYTES);
                host.copyFrom(MemorySegment.ofArray(bytes));
                long address = vgpu.memAlloc(BYTES);
                vgpu.memcpyHtoD(address, host, BYTES);
                assertEquals("remote", vgpu.backendName());

                VgpuException refused =
                        assertThrows(VgpuException.class, () -> vgpu.migrate(new MigrationTarget.LocalGpu(nodeGpu)));
                assertTrue(
                        refused.getMessage().contains("GPU " + nodeGpu + " of node gpu-node is not granted to job 42"),
                        refused.getMessage());

                tracker.send((poll, nonce) -> AgentChannel.Migrate.signed(
                        poll.credential().token(), nonce, 1, 0, new AgentChannel.LocalGpu(nodeGpu)));
                AgentChannel.Done done = tracker.nextDone();
                System.out.println("tracker received: " + done.format().replace(token, "<token>"));
                System.out.println("migration: " + reports.getLast().summary());
                assertInstanceOf(AgentChannel.Succeeded.class, done.outcome(), done.toString());
                assertEquals(new MigrationTarget.LocalGpu(nodeGpu), vgpu.placement());
                assertEquals("native", vgpu.backendName());
                MemorySegment back = arena.allocate(BYTES);
                vgpu.memcpyDtoH(back, address, BYTES);
                assertArrayEquals(bytes, back.toArray(ValueLayout.JAVA_BYTE), "the data came home");
            }
        }
    }
}
