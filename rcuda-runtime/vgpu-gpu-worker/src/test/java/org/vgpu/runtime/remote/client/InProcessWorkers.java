package org.vgpu.runtime.remote.client;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.worker.GpuWorker;
import org.vgpu.runtime.remote.worker.WorkerConfig;
import org.vgpu.runtime.remote.worker.WorkerReport;

/**
 * Workers in the test's own JVM on the CPU emulation, one per opened vGPU, for fast tests of the
 * client and the worker together; {@code RemoteGpuConformanceTest} runs real worker processes.
 */
final class InProcessWorkers implements WorkerSource {
    static final String TOKEN = "let-me-in";

    private final EmulatedBackend backend = new EmulatedBackend(2, 1L << 30, TestKernels.twins());
    private final Duration idleTimeout;
    private final long spinNanos;
    private final AtomicInteger started = new AtomicInteger();
    final List<GpuWorker> workers = new CopyOnWriteArrayList<>();
    final List<String> log = new CopyOnWriteArrayList<>();

    /** @param spinNanos how long the workers' threads poll before they sleep */
    InProcessWorkers(Duration idleTimeout, long spinNanos) {
        this.idleTimeout = idleTimeout;
        this.spinNanos = spinNanos;
    }

    @Override
    public int deviceCount() {
        return backend.deviceCount();
    }

    @Override
    public DeviceProperties deviceProperties(int device) {
        return backend.deviceProperties(device);
    }

    @Override
    public WorkerEndpoint open(int device, VaWindow window) {
        String id = "inproc-" + started.incrementAndGet();
        GpuWorker worker = GpuWorker.start(
                new WorkerConfig("127.0.0.1", 0, device, id, idleTimeout, spinNanos),
                backend,
                (token, asked) -> {
                    if (!TOKEN.equals(token)) {
                        throw new VgpuException(ErrorCode.VGPU_AUTH_FAILED, "wrong token");
                    }
                },
                null,
                log::add);
        workers.add(worker);
        return new WorkerEndpoint(id, "127.0.0.1", worker.address().getPort(), TOKEN, worker);
    }

    /** The report of the worker started {@code index}-th (from 0), waiting for its session to end. */
    WorkerReport report(int index) throws InterruptedException {
        return workers.get(index).awaitReport();
    }

    @Override
    public void close() {
        for (GpuWorker worker : workers) {
            worker.close();
        }
    }
}
