package org.vgpu.migration;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.vgpu.common.net.Endpoint;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.worker.GpuWorker;
import org.vgpu.runtime.remote.worker.WorkerConfig;

/**
 * GPU workers in the test's JVM, each serving one session on its own emulated devices, and the
 * credentials a tracker would hand out for them: remote targets for migration tests without a
 * cluster. Workers listen on loopback; the token is fixed.
 */
final class LocalWorkers implements AutoCloseable {
    private static final String TOKEN = "lent-to-this-job";

    private final EmulatedBackend devices = new EmulatedBackend(2, Emulation.MEMORY, TestKernels.twins());
    private final Map<Integer, GpuWorker> byPort = new ConcurrentHashMap<>();
    private final Map<Integer, String> idByPort = new ConcurrentHashMap<>();
    private final AtomicInteger started = new AtomicInteger();
    final CopyOnWriteArrayList<String> log = new CopyOnWriteArrayList<>();
    final RemoteWorkerResolver resolver = new RemoteWorkerResolver(this::endpointFor, RemoteConfig.defaults(), null);

    /** Starts a worker on emulated device {@code device} and returns it as a migration target. */
    MigrationTarget.RemoteWorker start(int device) {
        String id = "worker-" + started.incrementAndGet();
        GpuWorker worker = GpuWorker.start(
                new WorkerConfig("127.0.0.1", 0, device, id, Duration.ofSeconds(30), 0),
                devices,
                (token, window) -> {
                    if (!TOKEN.equals(token)) {
                        throw new VgpuException(ErrorCode.VGPU_AUTH_FAILED, "wrong token");
                    }
                },
                null,
                log::add);
        int port = worker.address().getPort();
        byPort.put(port, worker);
        idByPort.put(port, id);
        return new MigrationTarget.RemoteWorker(new Endpoint("127.0.0.1", port));
    }

    GpuWorker worker(MigrationTarget.RemoteWorker target) {
        return byPort.get(target.endpoint().port());
    }

    private WorkerEndpoint endpointFor(Endpoint worker, VaWindow window) {
        GpuWorker lent = byPort.get(worker.port());
        if (lent == null || !worker.host().equals("127.0.0.1")) {
            throw new VgpuException(ErrorCode.VGPU_AUTH_FAILED, "no worker at " + worker + " was lent to this job");
        }
        return new WorkerEndpoint(idByPort.get(worker.port()), worker.host(), worker.port(), TOKEN, lent);
    }

    @Override
    public void close() {
        resolver.close();
        byPort.values().forEach(GpuWorker::close);
        devices.close();
    }
}
