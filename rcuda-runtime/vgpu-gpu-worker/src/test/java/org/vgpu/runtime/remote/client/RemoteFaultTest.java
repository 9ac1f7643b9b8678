package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.PitchedMemory;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.lender.LaunchedWorker;
import org.vgpu.runtime.remote.worker.RawClient;
import org.vgpu.runtime.workloads.SaxpyWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * Faults with real worker processes: a worker killed or frozen mid-session fails its vGPU's calls
 * with VGPU_WORKER_LOST naming the worker while the app's other vGPU keeps working; a client that
 * vanishes frees its worker; an asynchronous kernel fault surfaces at the next synchronizing call.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RemoteFaultTest {
    /** Short, so a frozen worker is declared lost quickly; the client pings every third of it. */
    private static final Duration IDLE_TIMEOUT = Duration.ofSeconds(3);

    private static final Pattern WORKER_ID = Pattern.compile("worker (\\S+) at 127\\.0\\.0\\.1:\\d+");

    private SpawnedWorkers workers;
    private RemoteBackend backend;

    @BeforeEach
    void startBackend() {
        startBackend(SpawnedWorkers.SPARE_IDLE_TIMEOUT, true);
    }

    private void startBackend(Duration idleTimeout, boolean spares) {
        workers = new SpawnedWorkers("emulated", Backends.emulated(), idleTimeout, spares);
        backend = new RemoteBackend(workers, RemoteConfig.defaults(), null);
    }

    @AfterEach
    void stopBackend() {
        backend.close();
    }

    private LaunchedWorker workerOf(VirtualGpu gpu) {
        Matcher id = WORKER_ID.matcher(((RemoteGpu) gpu).workerDescription());
        assertTrue(id.matches(), ((RemoteGpu) gpu).workerDescription());
        return workers.worker(id.group(1));
    }

    /**
     * Stops {@code worker} with SIGSTOP and returns once every one of its threads is stopped. kill(2)
     * returns before that: the stop begins only when one thread takes the signal, and until then the
     * others go on serving (on a busy machine, long enough to answer a call).
     */
    private static void freeze(LaunchedWorker worker) throws IOException, InterruptedException {
        long pid = worker.process().pid();
        assertEquals(
                0,
                new ProcessBuilder("kill", "-STOP", Long.toString(pid)).start().waitFor());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!allThreadsStopped(pid)) {
            assertTrue(System.nanoTime() < deadline, "worker " + pid + " did not stop within 30 s of SIGSTOP");
            Thread.sleep(5);
        }
    }

    /** Whether /proc shows every thread of {@code pid} stopped (state T). */
    private static boolean allThreadsStopped(long pid) throws IOException {
        try (Stream<Path> threads = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path thread : threads.toList()) {
                String stat;
                try {
                    stat = Files.readString(thread.resolve("stat"));
                } catch (NoSuchFileException exited) {
                    continue;
                }
                // pid (comm) state ...: the command may hold spaces and parentheses, the state follows the last ')'
                if (stat.charAt(stat.lastIndexOf(')') + 2) != 'T') {
                    return false;
                }
            }
            return true;
        }
    }

    private static void assertLost(VgpuException e, VirtualGpu gpu) {
        assertEquals(ErrorCode.VGPU_WORKER_LOST, e.code(), e.getMessage());
        assertTrue(
                e.getMessage().contains(((RemoteGpu) gpu).workerDescription()), "names the worker: " + e.getMessage());
    }

    @Test
    void aKilledWorkerFailsTheNextCallAndTheOtherVgpuKeepsWorking() throws Exception {
        VirtualGpu doomed = backend.open(0, VaWindow.forVgpu(0));
        try (VirtualGpu survivor = backend.open(1, VaWindow.forVgpu(1))) {
            long buffer = doomed.memAlloc(1 << 20);
            LaunchedWorker worker = workerOf(doomed);
            worker.process().destroyForcibly().waitFor();

            VgpuException lost = assertThrows(
                    VgpuException.class,
                    () -> doomed.memcpyHtoD(buffer, MemorySegment.ofArray(new int[] {1, 2, 3, 4}), 16));
            assertLost(lost, doomed);
            assertLost(assertThrows(VgpuException.class, doomed::ctxSynchronize), doomed);
            doomed.close();

            WorkloadResult result = new SaxpyWorkload().run(survivor, 1, 11);
            assertTrue(result.passed(), result.errorSummary());
        }
    }

    @Test
    void aCallWaitingWhenTheWorkerDiesFails() throws Exception {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            LaunchedWorker worker = workerOf(gpu);
            freeze(worker);
            CompletableFuture<Void> waiting = CompletableFuture.runAsync(gpu::ctxSynchronize);
            Thread.sleep(300);
            assertTrue(!waiting.isDone(), "the frozen worker cannot answer");
            worker.process().destroyForcibly().waitFor();
            Throwable failure = assertThrows(Exception.class, () -> waiting.get(10, TimeUnit.SECONDS))
                    .getCause();
            assertLost((VgpuException) failure, gpu);
        }
    }

    @Test
    void aFrozenWorkerIsLostWhenItsKeepaliveExpires() throws Exception {
        backend.close();
        startBackend(IDLE_TIMEOUT, false);
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            LaunchedWorker worker = workerOf(gpu);
            freeze(worker);
            try {
                long start = System.nanoTime();
                VgpuException lost = assertThrows(VgpuException.class, gpu::ctxSynchronize);
                long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                assertLost(lost, gpu);
                assertTrue(lost.getMessage().contains("keepalive expired"), lost.getMessage());
                // not before the idle timeout (less the keepalive period it is checked at), and without hanging
                assertTrue(
                        waited >= IDLE_TIMEOUT.toMillis() - 1000 && waited < 5 * IDLE_TIMEOUT.toMillis(),
                        waited + " ms");
            } finally {
                worker.process().destroyForcibly().waitFor();
            }
        }
    }

    @Test
    void aClientThatVanishesFreesItsWorker() throws Exception {
        WorkerEndpoint endpoint = workers.open(0, VaWindow.forVgpu(4));
        LaunchedWorker worker = workers.worker(endpoint.workerId());
        try (RawClient client = new RawClient(endpoint.host(), endpoint.port())) {
            assertEquals(
                    "#1 welcome " + endpoint.workerId(),
                    client.hello(1, endpoint.token(), VaWindow.forVgpu(4)).read());
            assertEquals(
                    "#2 ok 0 bytes",
                    client.send(e -> e.memAllocAt(2, VaWindow.forVgpu(4).base(), 256 << 20))
                            .read());
        }
        worker.onExit().get(20, TimeUnit.SECONDS);
        assertEquals(1, worker.process().exitValue(), "no goodbye: the session did not end cleanly");
        assertTrue(
                worker.servedSummary().orElseThrow().startsWith("vgpu-worker served calls=2 "),
                worker.servedSummary().orElseThrow());
        endpoint.close();
    }

    @Test
    void anAsynchronousKernelFaultSurfacesAtTheNextSynchronizingCall() {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            launchFaultingKernel(gpu);
            VgpuException fault = assertThrows(VgpuException.class, gpu::ctxSynchronize);
            assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, fault.code(), fault.getMessage());
            assertTrue(fault.getMessage().contains("vectorAdd"), fault.getMessage());
            gpu.ctxSynchronize();
            WorkloadResult after = new SaxpyWorkload().run(gpu, 1, 2);
            assertTrue(after.passed(), "the emulated vGPU stays usable after the fault is reported");
        }
    }

    /** A vectorAdd on unmapped addresses of the window: it faults on the worker, asynchronously. */
    private static void launchFaultingKernel(VirtualGpu gpu) {
        FunctionHandle add = gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.VECTOR_ADD);
        long nowhere = gpu.window().base() + (64L << 20);
        gpu.launchKernel(
                add,
                Dim3.of(4),
                Dim3.of(256),
                0,
                StreamHandle.DEFAULT,
                KernelArgs.builder()
                        .pointer(nowhere)
                        .pointer(nowhere)
                        .pointer(nowhere)
                        .i32(1024)
                        .build());
    }

    @Test
    void theCallsOfIssue20ReportAnEarlierKernelFaultOrALostWorker() throws Exception {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            long device = gpu.memAlloc(64);
            launchFaultingKernel(gpu);
            VgpuException fault = assertThrows(
                    VgpuException.class,
                    () -> gpu.memcpy2D(
                            new PitchedMemory.Host(MemorySegment.ofArray(new byte[64]), 16),
                            new PitchedMemory.Device(device, 16),
                            16,
                            4));
            assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, fault.code(), "a 2D copy synchronizes");
            launchFaultingKernel(gpu);
            fault = assertThrows(VgpuException.class, () -> gpu.memsetD16(device, (short) 1, 32));
            assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, fault.code(), fault.getMessage());
            gpu.memsetD16(device, (short) 1, 32);
        }
        VirtualGpu doomed = backend.open(0, VaWindow.forVgpu(2));
        ModuleHandle module = doomed.moduleLoadData(TestKernels.ptx());
        FunctionHandle add = doomed.moduleGetFunction(module, TestKernels.VECTOR_ADD);
        workerOf(doomed).process().destroyForcibly().waitFor();
        assertLost(
                assertThrows(VgpuException.class, () -> doomed.deviceGetAttribute(DeviceAttribute.WARP_SIZE)), doomed);
        assertLost(
                assertThrows(VgpuException.class, () -> doomed.funcGetAttribute(FunctionAttribute.NUM_REGS, add)),
                doomed);
        assertLost(assertThrows(VgpuException.class, () -> doomed.moduleGetGlobal(module, "anything")), doomed);
        doomed.close();
    }

    @Test
    void queriesReportAnEarlierAsynchronousKernelFaultAsCudasDo() {
        try (VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            launchFaultingKernel(gpu);
            VgpuException fault = assertThrows(VgpuException.class, () -> gpu.streamQuery(StreamHandle.DEFAULT));
            assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, fault.code(), fault.getMessage());
            assertTrue(gpu.streamQuery(StreamHandle.DEFAULT), "reported once, then the stream is done");
            EventHandle after = gpu.eventCreate();
            launchFaultingKernel(gpu);
            gpu.eventRecord(after, StreamHandle.DEFAULT);
            fault = assertThrows(VgpuException.class, () -> gpu.eventQuery(after));
            assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, fault.code(), fault.getMessage());
            assertTrue(gpu.eventQuery(after), "reported once, then the event is done");
        }
    }
}
