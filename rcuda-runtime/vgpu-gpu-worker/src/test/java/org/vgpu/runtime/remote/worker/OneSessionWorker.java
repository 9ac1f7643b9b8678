package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * A worker in this JVM serving one session on an emulated GPU of {@value #MEMORY} bytes, for tests that play its
 * client byte by byte ({@link RawClient}): started before each test, closed after it. Registered as an instance
 * field ({@code @RegisterExtension}), so each test has its own GPU.
 */
final class OneSessionWorker implements BeforeEachCallback, AfterEachCallback {
    static final String TOKEN = GpuWorkerTest.TOKEN;
    static final long MEMORY = 1L << 30;
    /** The window the tests' sessions claim. */
    static final VaWindow WINDOW = VaWindow.forVgpu(2);

    private final EmulatedBackend backend = new EmulatedBackend(1, MEMORY, TestKernels.twins());
    private final List<String> log = new CopyOnWriteArrayList<>();
    private GpuWorker worker;

    @Override
    public void beforeEach(ExtensionContext context) {
        worker = GpuWorkerTest.startTestWorker(backend, Duration.ofSeconds(10), GpuWorker.Sessions.ONE, log);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        worker.close();
    }

    /** A raw client connected to the worker. */
    RawClient connect() {
        return new RawClient("127.0.0.1", worker.address().getPort());
    }

    /**
     * Waits for the session to end, which must not have been clean, and checks the vGPU was freed (a probe of another
     * window finds all memory free).
     *
     * @return the worker's report, for what the test checks besides
     */
    WorkerReport assertEndedUncleanAndFreed() throws InterruptedException {
        WorkerReport report = worker.awaitReport();
        assertFalse(report.clean(), report.toString());
        try (VirtualGpu probe = backend.open(0, VaWindow.forVgpu(9))) {
            assertEquals(MEMORY, probe.memGetInfo().free());
        }
        return report;
    }
}
