package org.vgpu.job;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.common.security.TokenVerifier;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.worker.GpuWorker;
import org.vgpu.runtime.remote.worker.SessionAuthenticator;
import org.vgpu.runtime.remote.worker.WorkerConfig;

/**
 * GPU workers in the test's JVM on emulated devices, playing the lender nodes of a job: each checks
 * session tokens with a site key as a real worker does, and the tracker's part (issuing a token for
 * the job's vGPU on that worker) is {@link #lend}.
 */
final class LentWorkers implements AutoCloseable {
    static final String JOB = "42";

    private final ThrowawaySiteKey siteKey = ThrowawaySiteKey.create("vgpu-run-test");
    private final SiteKey key = SiteKey.load(siteKey.keyFile());
    private final EmulatedBackend devices = new EmulatedBackend(2, 1L << 30, TestKernels.twins());
    private final List<GpuWorker> workers = new CopyOnWriteArrayList<>();
    final List<String> log = new CopyOnWriteArrayList<>();

    /** A lent worker: its endpoint as VGPU_ASSEMBLY writes it and the VGPU_REMOTE entry for {@code vgpu}. */
    record Lend(int vgpu, String endpoint, String token) {
        String assemblyEntry() {
            return vgpu + "=remote:" + endpoint;
        }

        String remoteEntry() {
            return vgpu + "@" + endpoint + "#" + token;
        }
    }

    /** Starts a worker on emulated device {@code device} and issues this job a token for vGPU {@code vgpu} on it. */
    Lend lend(int vgpu, int device) {
        String id = "lender-" + (workers.size() + 1);
        GpuWorker worker = GpuWorker.start(
                new WorkerConfig("127.0.0.1", 0, device, id, Duration.ofSeconds(60)),
                devices,
                SessionAuthenticator.checking(new TokenVerifier(key, id, Clock.systemUTC())),
                null,
                log::add);
        workers.add(worker);
        String token = siteKey.issuer().issue(JOB, vgpu, id, Duration.ofMinutes(10));
        return new Lend(vgpu, "127.0.0.1:" + worker.address().getPort(), token);
    }

    @Override
    public void close() {
        workers.forEach(GpuWorker::close);
        devices.close();
        siteKey.close();
    }
}
