package org.vgpu.bench.migration;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.migration.MigrationListener;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.NodeTargetResolver;
import org.vgpu.migration.RemoteWorkerResolver;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.lender.LaunchedWorker;
import org.vgpu.runtime.remote.lender.WorkerLauncher;
import org.vgpu.runtime.remote.lender.WorkerSpec;

/**
 * The mission's placement: each source vGPU is served by its own GPU worker process on loopback
 * (started as a lender starts one, with a site key and a session token), and the target is a GPU of
 * this process. On a GPU machine that is remote to native; the worker may use the target's GPU,
 * since windows are per process.
 */
final class WorkerPlacement implements Placement {
    private static final String JOB = "migration-bench";

    private final GpuBackend local;
    private final String workerBackend;
    private final int workerDevice;
    private final int targetDevice;
    private final MigrationConfig config;
    private final ThrowawaySiteKey siteKey = ThrowawaySiteKey.create("vgpu-migration-bench");
    private final WorkerLauncher launcher = new WorkerLauncher();
    private final AtomicInteger launches = new AtomicInteger();
    private final Map<Integer, LaunchedWorker> byPort = new ConcurrentHashMap<>();
    private final RemoteWorkerResolver workers;

    WorkerPlacement(
            GpuBackend local, String workerBackend, int workerDevice, int targetDevice, MigrationConfig config) {
        this.local = local;
        this.config = config;
        this.workerBackend = workerBackend;
        this.workerDevice = workerDevice;
        this.targetDevice = targetDevice;
        workers = new RemoteWorkerResolver(this::credentials, RemoteConfig.defaults(), null);
    }

    @Override
    public MigratableGpu openOnSource(int vgpu) {
        MigrationTarget.RemoteWorker worker = launch();
        VirtualGpu remote = workers.open(worker, VaWindow.forVgpu(vgpu), null);
        return new MigratableGpu(
                remote,
                worker,
                new NodeTargetResolver(local, workers),
                config,
                MigrationListener.NONE,
                MigrationFaults.NONE);
    }

    @Override
    public VirtualGpu openPlainOnSource(int vgpu) {
        return workers.open(launch(), VaWindow.forVgpu(vgpu), null);
    }

    /** A migration target in a GPU worker process of its own. */
    MigrationTarget.RemoteWorker workerTarget() {
        return launch();
    }

    private MigrationTarget.RemoteWorker launch() {
        String id = "bench-worker-" + launches.incrementAndGet();
        LaunchedWorker launched = launcher.launch(
                new WorkerSpec(new Endpoint("127.0.0.1", 0), workerBackend, workerDevice, id, siteKey.keyFile()));
        byPort.put(launched.endpoint().port(), launched);
        return new MigrationTarget.RemoteWorker(launched.endpoint());
    }

    private WorkerEndpoint credentials(Endpoint worker, VaWindow window) {
        LaunchedWorker launched = byPort.remove(worker.port());
        if (launched == null) {
            throw new VgpuException(ErrorCode.VGPU_AUTH_FAILED, "the benchmark started no worker at " + worker);
        }
        String token = siteKey.issuer().issue(JOB, window.tokenWindow(), launched.workerId(), Duration.ofHours(1));
        return new WorkerEndpoint(launched.workerId(), worker.host(), worker.port(), token, launched);
    }

    @Override
    public MigrationConfig config() {
        return config;
    }

    @Override
    public GpuBackend local() {
        return local;
    }

    @Override
    public int targetDevice() {
        return targetDevice;
    }

    @Override
    public String describe() {
        return "worker process (" + workerBackend + " device " + workerDevice + ") -> " + local.name() + " device "
                + targetDevice;
    }

    /** Stops workers that were started but never connected to, and removes the site key. */
    @Override
    public void close() {
        byPort.values().forEach(LaunchedWorker::close);
        workers.close();
        siteKey.close();
    }
}
