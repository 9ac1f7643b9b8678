package org.vgpu.runtime.remote.client;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.remote.lender.LaunchedWorker;
import org.vgpu.runtime.remote.lender.WorkerLauncher;
import org.vgpu.runtime.remote.lender.WorkerSpec;

/**
 * Real GPU worker processes ({@code WorkerCommand} started through the lender's
 * {@link WorkerLauncher}, with this JVM's class path), one per opened vGPU, on loopback, with a
 * site key and session tokens as in production. A spare worker per device is started ahead, so a
 * test does not wait for a JVM to start. Every process is gone after {@link #close}.
 */
final class SpawnedWorkers implements WorkerSource {
    private static final String JOB = "test-job";
    /** Long enough for a spare worker to wait through a slow test; each test's worker ends with its vGPU. */
    static final Duration SPARE_IDLE_TIMEOUT = Duration.ofSeconds(120);

    private final String backendName;
    private final GpuBackend localTwin;
    private final Duration idleTimeout;
    private final boolean keepSpares;
    private final ThrowawaySiteKey siteKey = ThrowawaySiteKey.create("vgpu-workers");
    private final WorkerLauncher launcher = new WorkerLauncher();
    private final AtomicInteger launches = new AtomicInteger();
    private final Map<Integer, CompletableFuture<LaunchedWorker>> spares = new HashMap<>();
    private final List<LaunchedWorker> launched = new CopyOnWriteArrayList<>();

    /**
     * @param backendName the workers' backend, "emulated" or "native"
     * @param localTwin   the same backend in this process, which answers device queries as the workers will
     */
    SpawnedWorkers(String backendName, GpuBackend localTwin) {
        this(backendName, localTwin, SPARE_IDLE_TIMEOUT, true);
    }

    /**
     * @param idleTimeout the workers' idle timeout
     * @param spares      whether to start a worker ahead; only with an idle timeout long enough that a
     *                    spare does not give up just as it is handed out
     */
    SpawnedWorkers(String backendName, GpuBackend localTwin, Duration idleTimeout, boolean spares) {
        this.backendName = backendName;
        this.localTwin = localTwin;
        this.idleTimeout = idleTimeout;
        this.keepSpares = spares;
    }

    @Override
    public int deviceCount() {
        return localTwin.deviceCount();
    }

    @Override
    public DeviceProperties deviceProperties(int device) {
        return localTwin.deviceProperties(device);
    }

    @Override
    public WorkerEndpoint open(int device, VaWindow window) {
        LaunchedWorker worker = takeSpare(device);
        String token = siteKey.issuer().issue(JOB, window.tokenWindow(), worker.workerId(), Duration.ofMinutes(10));
        Endpoint at = worker.endpoint();
        return new WorkerEndpoint(worker.workerId(), at.host(), at.port(), token, () -> stop(worker));
    }

    /** A started worker that is still waiting for its client, or a new one; another spare is started either way. */
    private LaunchedWorker takeSpare(int device) {
        if (!keepSpares) {
            return launch(device);
        }
        CompletableFuture<LaunchedWorker> spare;
        synchronized (spares) {
            spare = spares.put(device, CompletableFuture.supplyAsync(() -> launch(device)));
        }
        if (spare != null) {
            try {
                LaunchedWorker worker = spare.join();
                if (worker.process().isAlive()) {
                    return worker;
                }
            } catch (RuntimeException failedToStart) {
                // start one now, which reports the failure if it happens again
            }
        }
        return launch(device);
    }

    private LaunchedWorker launch(int device) {
        String id = "w" + launches.incrementAndGet();
        WorkerSpec spec = new WorkerSpec(
                new Endpoint("127.0.0.1", 0),
                backendName,
                device,
                id,
                siteKey.keyFile(),
                Optional.empty(),
                Optional.of(idleTimeout));
        LaunchedWorker worker = launcher.launch(spec);
        launched.add(worker);
        return worker;
    }

    /** The worker started as {@code workerId}. */
    LaunchedWorker worker(String workerId) {
        return launched.stream()
                .filter(worker -> worker.workerId().equals(workerId))
                .findFirst()
                .orElseThrow();
    }

    /** After a goodbye the worker exits by itself; a worker that does not is stopped. */
    private static void stop(LaunchedWorker worker) {
        try {
            worker.onExit().get(10, TimeUnit.SECONDS);
        } catch (Exception stillRunning) {
            // close() below stops it
        }
        worker.close();
    }

    @Override
    public void close() {
        synchronized (spares) {
            for (CompletableFuture<LaunchedWorker> spare : spares.values()) {
                spare.thenAccept(LaunchedWorker::close)
                        .exceptionally(failed -> null)
                        .join();
            }
            spares.clear();
        }
        for (LaunchedWorker worker : launched) {
            worker.close();
        }
        localTwin.close();
        siteKey.close();
    }
}
