package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.workloads.LennardJonesWorkload;
import org.vgpu.runtime.workloads.PointerChaseWorkload;
import org.vgpu.runtime.workloads.Workload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * Failure is not loss: a fault injected at each step before the switch rolls the migration back;
 * the workload that was running goes on on its source and reads back the same bits as a run
 * without any migration; the target's memory is freed; the error is reported.
 */
class MigrationFaultTest {
    private static final long SEED = 7;

    /** A fault, where it strikes, and the step and code it must be reported with. */
    record Fault(String name, MigrationFaults faults, MigrationStep step, ErrorCode code) {
        @Override
        public String toString() {
            return name;
        }
    }

    static MigrationFaults at(FaultPoint point, int index, FaultAction action) {
        return (reached, reachedIndex, target) -> {
            if (reached == point && reachedIndex == index) {
                action.strike(target);
            }
        };
    }

    @FunctionalInterface
    interface FaultAction {
        void strike(VirtualGpu target);
    }

    static FaultAction throwing(ErrorCode code) {
        return target -> {
            throw new VgpuException(code, "injected");
        };
    }

    static Stream<Fault> faults() {
        return Stream.of(
                new Fault(
                        "target cannot reserve the window",
                        at(FaultPoint.OPEN_TARGET, 0, throwing(ErrorCode.VGPU_WINDOW_UNAVAILABLE)),
                        MigrationStep.OPEN_TARGET,
                        ErrorCode.VGPU_WINDOW_UNAVAILABLE),
                new Fault(
                        "out of memory replaying the 2nd allocation",
                        at(FaultPoint.REPLAY_ALLOCATION, 1, throwing(ErrorCode.CUDA_ERROR_OUT_OF_MEMORY)),
                        MigrationStep.REPLAY,
                        ErrorCode.CUDA_ERROR_OUT_OF_MEMORY),
                new Fault(
                        "copy fails mid-way",
                        at(FaultPoint.MEM_SYNC_BATCH, 1, throwing(ErrorCode.CUDA_ERROR_LAUNCH_FAILED)),
                        MigrationStep.MEM_SYNC,
                        ErrorCode.CUDA_ERROR_LAUNCH_FAILED),
                new Fault(
                        "target dies during the copy",
                        at(FaultPoint.MEM_SYNC_BATCH, 1, VirtualGpu::close),
                        MigrationStep.MEM_SYNC,
                        ErrorCode.VGPU_CLOSED),
                new Fault(
                        "copy mismatch",
                        at(FaultPoint.VERIFY, 0, MigrationFaultTest::corruptFirstByte),
                        MigrationStep.VERIFY,
                        ErrorCode.VGPU_MIGRATION_FAILED),
                new Fault(
                        "a failure of no GPU call",
                        at(FaultPoint.MEM_SYNC_BATCH, 0, target -> {
                            throw new IllegalStateException("injected: a bug in vgpu");
                        }),
                        MigrationStep.MEM_SYNC,
                        ErrorCode.VGPU_MIGRATION_FAILED));
    }

    /** Flips the bits of the first byte of the lowest live allocation of the target. */
    private static void corruptFirstByte(VirtualGpu target) {
        long address = target.window().base();
        byte[] one = new byte[1];
        target.memcpyDtoH(MemorySegment.ofArray(one), address, 1);
        one[0] = (byte) ~one[0];
        target.memcpyHtoD(address, MemorySegment.ofArray(one), 1);
    }

    static Stream<Arguments> faultsAndWorkloads() {
        return faults().flatMap(fault -> Stream.of(
                Arguments.of(fault, new LennardJonesWorkload()), Arguments.of(fault, new PointerChaseWorkload())));
    }

    @ParameterizedTest(name = "{0} during {1}")
    @MethodSource("faultsAndWorkloads")
    void anInjectedFaultRollsBackAndTheWorkloadFinishesCorrectly(Fault fault, Workload workload) {
        // The smallest chunks, so that even the small MD run's copy has several batches and a fault can strike mid-way.
        MigrationConfig config = Emulation.VERIFIED.withChunkBytes(4096);
        List<MigrationReport> reports = new ArrayList<>();
        try (Emulation emulation = new Emulation(2)) {
            Transcript reference;
            try (VirtualGpu plain = emulation.backend.open(0, VaWindow.forVgpu(0))) {
                reference = new Transcript(plain);
                workload.run(reference, 1, SEED);
            }
            try (MigratableGpu gpu = emulation.open(0, 0, config, reports::add, fault.faults())) {
                long migrateAfter = Math.max(1, reference.launches() / 2);
                FailingTrigger trigger = new FailingTrigger(gpu, migrateAfter);
                Transcript observed = new Transcript(trigger);
                WorkloadResult result = workload.run(observed, 1, SEED);

                MigrationException failure = trigger.failure;
                assertNotNull(failure, "the migration failed");
                assertEquals(fault.step(), failure.failedStep(), failure.getMessage());
                assertEquals(fault.code(), failure.code(), failure.getMessage());
                assertEquals(List.of(failure.report()), reports, "the listener got the rolled-back report");
                assertTrue(failure.getMessage().contains("rolled back at " + fault.step()), failure.getMessage());
                assertEquals("gpu 0 (emulated)", gpu.location(), "still on the source");
                assertEquals(0, emulation.usedBytes(1), "the target's memory was freed");
                assertTrue(result.passed(), result.errorSummary());
                assertEquals(reference.digest(), observed.digest(), "the app's results changed");
            }
        }
    }

    /** After a rolled-back migration the same vGPU migrates fine (the fault struck once). */
    @Test
    void aRolledBackVgpuMigratesLater() {
        int[] attempts = {0};
        MigrationFaults failFirstOpen = (point, index, target) -> {
            if (point == FaultPoint.OPEN_TARGET && attempts[0]++ == 0) {
                throw new VgpuException(ErrorCode.VGPU_WORKER_LOST, "injected");
            }
        };
        try (Emulation emulation = new Emulation(2);
                MigratableGpu gpu = emulation.open(0, 0, Emulation.VERIFIED, MigrationListener.NONE, failFirstOpen)) {
            long data = gpu.memAlloc(1 << 20);
            gpu.memsetD32(data, 0x12345678, (1 << 20) / 4);
            MigrationException failure = assertThrows(MigrationException.class, () -> gpu.migrate(Emulation.gpu(1)));
            assertEquals(ErrorCode.VGPU_WORKER_LOST, failure.code());
            assertTrue(gpu.migrate(Emulation.gpu(1)).migrated());
            int[] word = new int[1];
            gpu.memcpyDtoH(MemorySegment.ofArray(word), data + 4096, 4);
            assertEquals(0x12345678, word[0]);
            assertEquals(1, gpu.migrationCount());
        }
    }

    /** A real out-of-memory: the target device is too small for the live state. */
    @Test
    void aTargetWithoutRoomRollsBack() {
        try (EmulatedBackend small = new EmulatedBackend(1, 4L << 20, TestKernels.twins());
                Emulation emulation = new Emulation(1);
                MigratableGpu gpu = new MigratableGpu(
                        emulation.backend.open(0, VaWindow.forVgpu(0)),
                        Emulation.gpu(0),
                        (target, window, source) -> small.open(0, window),
                        Emulation.VERIFIED,
                        MigrationListener.NONE,
                        MigrationFaults.NONE)) {
            long[] regions = {gpu.memAlloc(3 << 20), gpu.memAlloc(3 << 20)};
            for (long region : regions) {
                gpu.memsetD8(region, (byte) 0x5c, 3 << 20);
            }
            // The resolver opens the small device whatever the target; the target must only differ from where the
            // vGPU runs (a migration there is refused before anything opens).
            MigrationException failure = assertThrows(MigrationException.class, () -> gpu.migrate(Emulation.gpu(1)));
            assertEquals(MigrationStep.REPLAY, failure.failedStep());
            assertEquals(ErrorCode.CUDA_ERROR_OUT_OF_MEMORY, failure.code());
            byte[] back = new byte[3 << 20];
            gpu.memcpyDtoH(MemorySegment.ofArray(back), regions[1], back.length);
            for (byte b : back) {
                assertEquals(0x5c, b);
            }
        }
    }

    /** Runs the app's launches and migrates after the n-th, keeping the failure instead of throwing it at the app. */
    private static final class FailingTrigger extends ForwardingVirtualGpu {
        private final MigratableGpu gpu;
        private final long after;
        private long launches;
        MigrationException failure;

        FailingTrigger(MigratableGpu gpu, long after) {
            super(gpu);
            this.gpu = gpu;
            this.after = after;
        }

        @Override
        public void launchKernel(
                FunctionHandle function,
                Dim3 grid,
                Dim3 block,
                int sharedMemBytes,
                StreamHandle stream,
                KernelArgs args) {
            super.launchKernel(function, grid, block, sharedMemBytes, stream, args);
            if (++launches == after) {
                try {
                    gpu.migrate(Emulation.gpu(1));
                } catch (MigrationException e) {
                    failure = e;
                }
            }
        }
    }
}
