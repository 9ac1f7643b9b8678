package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.DirectDriverCalls;
import org.vgpu.runtime.api.DriverHandles;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.ForwardingGpuBackend;
import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * Direct driver calls past a migratable vGPU (vgpu's libcuda.so.1 in the program's process): the driver handles it
 * answers are those of the GPU it runs on now, translated from the app's handles, and its direct callers are stopped
 * before every migration locks it and resumed after, whether it moved or not. The emulated devices here stand in for
 * GPUs of the process with made-up driver handles ({@link OnGpu}); no driver is called.
 */
@Timeout(60)
class DirectDriverCallsTest {
    private final Emulation emulation = new Emulation(2);
    /** The emulated devices' vGPUs, each with driver handles that name its device: {@code device << 20 | id}. */
    private final ForwardingGpuBackend gpus = new ForwardingGpuBackend(emulation.backend) {
        @Override
        public VirtualGpu open(int device, VaWindow window) {
            return new OnGpu(delegate().open(device, window), device);
        }
    };

    private final List<String> events = new CopyOnWriteArrayList<>();

    @AfterEach
    void close() {
        emulation.close();
    }

    /** A vGPU on a GPU of this process, as the native backend's are, whose handles say which device. */
    private static final class OnGpu extends ForwardingVirtualGpu implements DriverHandles {
        private final int device;

        OnGpu(VirtualGpu inner, int device) {
            super(inner);
            this.device = device;
        }

        @Override
        public long driverContext() {
            return 0x1000L + device;
        }

        @Override
        public long driverFunction(FunctionHandle function) {
            return (long) device << 20 | function.id();
        }

        @Override
        public long driverStream(StreamHandle stream) {
            return (long) device << 20 | stream.id();
        }
    }

    /** Callers that note each stop and resume, and refuse to stop when told to. */
    private final class NotedCallers implements DirectDriverCalls.DirectCallers {
        volatile boolean refuse;

        @Override
        public boolean stop(Duration timeout) {
            events.add("stop");
            return !refuse;
        }

        @Override
        public void resume() {
            events.add("resume");
        }
    }

    private MigratableGpu vgpu() {
        return new MigratableGpu(
                gpus.open(0, VaWindow.forVgpu(0)),
                Emulation.gpu(0),
                new NodeTargetResolver(gpus),
                Emulation.VERIFIED,
                MigrationListener.NONE,
                MigrationFaults.NONE);
    }

    @Test
    void theHandlesAreThoseOfTheGpuTheVgpuRunsOnNow() {
        try (MigratableGpu vgpu = vgpu()) {
            ModuleHandle module = vgpu.moduleLoadData(TestKernels.ptx());
            FunctionHandle kernel = vgpu.moduleGetFunction(module, TestKernels.VECTOR_ADD);
            StreamHandle stream = vgpu.streamCreate();
            long[] before = vgpu.withDriverHandles(
                            h -> new long[] {h.driverContext(), h.driverFunction(kernel), h.driverStream(stream)})
                    .orElseThrow();
            assertEquals(0x1000, before[0]);
            assertEquals(0, before[1] >> 20, "device 0's function");

            vgpu.migrate(Emulation.gpu(1));

            long[] after = vgpu.withDriverHandles(
                            h -> new long[] {h.driverContext(), h.driverFunction(kernel), h.driverStream(stream)})
                    .orElseThrow();
            assertEquals(0x1001, after[0], "the context of the GPU it moved to");
            assertEquals(1, after[1] >> 20, "the app's function, as loaded on device 1");
            assertEquals(1, after[2] >> 20, "the app's stream, as created on device 1");
        }
    }

    @Test
    void aVgpuOnNoGpuOfThisProcessAnswersNone() {
        try (MigratableGpu emulated = emulation.open(0, 0)) {
            assertEquals(Optional.empty(), emulated.withDriverHandles(DriverHandles::driverContext));
        }
    }

    @Test
    void directCallersAreStoppedBeforeEachMigrationLocksAndResumedAfter() {
        try (MigratableGpu vgpu = vgpu()) {
            NotedCallers callers = new NotedCallers();
            vgpu.addDirectCallers(callers);
            vgpu.migrate(Emulation.gpu(1));
            assertEquals(List.of("stop", "resume"), events);

            events.clear();
            callers.refuse = true;
            MigrationException refused = assertThrows(MigrationException.class, () -> vgpu.migrate(Emulation.gpu(0)));
            assertTrue(
                    refused.getMessage().contains("the program's direct driver calls were still under way"),
                    refused.getMessage());
            assertEquals(List.of("stop", "resume"), events, "resumed at once, the vGPU still where it was");
            assertEquals(
                    0x1001, vgpu.withDriverHandles(DriverHandles::driverContext).orElseThrow());
            events.clear();
            NotedCallers later = new NotedCallers();
            vgpu.addDirectCallers(later);
            assertEquals(List.of(), events, "callers added after the refused migration are not stopped");
            vgpu.removeDirectCallers(later);

            events.clear();
            vgpu.removeDirectCallers(callers);
            vgpu.migrate(Emulation.gpu(0));
            assertEquals(List.of(), events, "forgotten callers are not stopped");
        }
    }

    /** Callers added while a migration holds the gate (a program's session opening then) are stopped until it ends. */
    @Test
    void callersAddedWhileTheGateIsShutAreStoppedUntilItReopens() {
        CallGate gate = new CallGate("vGPU 0");
        gate.shut(Duration.ofSeconds(1));
        gate.addDirectCallers(new NotedCallers());
        assertEquals(List.of("stop"), events);
        gate.reopen();
        assertEquals(List.of("stop", "resume"), events);
        gate.addDirectCallers(new NotedCallers());
        assertEquals(List.of("stop", "resume"), events, "added to an open gate: nothing to stop");
    }

    @Test
    void aClosedVgpuLeavesItsDirectCallersStopped() {
        MigratableGpu vgpu = vgpu();
        vgpu.addDirectCallers(new NotedCallers());
        vgpu.close();
        assertEquals(List.of("stop"), events);
        VgpuException closed = assertThrows(VgpuException.class, () -> vgpu.withDriverHandles(h -> 1));
        assertEquals(ErrorCode.VGPU_CLOSED, closed.code());
    }
}
