package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * {@link Migration} against {@link MigrationSubject} alone, without a {@link MigratableGpu}: a
 * subject that records what the migration asked of it, over emulated devices.
 */
class MigrationTest {
    private static final int BYTES = 64 << 10;

    /** A vGPU on device 0 with one allocation full of a known pattern; records the hooks the migration calls. */
    private static final class RecordingSubject implements MigrationSubject {
        final VirtualGpu source;
        final ReplayLog log = new ReplayLog();
        final CallGate gate = new CallGate("vGPU 3");
        final EventTimes eventTimes = new EventTimes();
        final List<String> hooks = new ArrayList<>();
        VirtualGpu switchedTo;
        VgpuException deferred;

        RecordingSubject(VirtualGpu source) {
            this.source = source;
        }

        @Override
        public VaWindow window() {
            return source.window();
        }

        @Override
        public DeviceProperties shownProperties() {
            return source.deviceProperties();
        }

        @Override
        public String location() {
            return "gpu 0 (emulated)";
        }

        @Override
        public VirtualGpu currentBackend() {
            return source;
        }

        @Override
        public ReplayLog log() {
            return log;
        }

        @Override
        public EventTimes eventTimes() {
            return eventTimes;
        }

        @Override
        public CallGate gate() {
            return gate;
        }

        @Override
        public void deferError(VgpuException error) {
            hooks.add("deferError");
            deferred = error;
        }

        @Override
        public void switchTo(VirtualGpu target, MigrationTarget newLocation, ReplayLog.Rebinding rebinding) {
            hooks.add("switchTo " + newLocation);
            rebinding.commit();
            switchedTo = target;
        }

        @Override
        public void release(VirtualGpu source, List<DeviceRegion> regions) {
            hooks.add("release " + regions.size() + " region(s)");
            source.close();
        }
    }

    private static Migration migration(
            RecordingSubject subject, Emulation emulation, MigrationFaults faults, List<MigrationReport> reports) {
        return new Migration(
                subject,
                Emulation.gpu(1),
                new NodeTargetResolver(emulation.backend),
                Emulation.VERIFIED,
                faults,
                reports::add);
    }

    /** Allocates on the subject's source, as MigratableGpu would, and fills the allocation with a pattern. */
    private static byte[] allocateOnSource(RecordingSubject subject) {
        long address = subject.source.memAlloc(BYTES);
        subject.log.addAllocation(address, BYTES);
        byte[] pattern = new byte[BYTES];
        for (int i = 0; i < BYTES; i++) {
            pattern[i] = (byte) (i * 31 + 7);
        }
        subject.source.memcpyHtoD(address, MemorySegment.ofArray(pattern), BYTES);
        return pattern;
    }

    /** The gate lets a call through within a few seconds: a migration that shut it opened it again. */
    private static void assertGateOpen(CallGate gate) throws Exception {
        CompletableFuture.runAsync(() -> gate.exit(gate.enter())).get(5, TimeUnit.SECONDS);
    }

    @Test
    void aMigrationCopiesTheStateSwitchesWithTheGateShutThenReleasesTheSource() throws Exception {
        List<MigrationReport> reports = new ArrayList<>();
        try (Emulation emulation = new Emulation(2)) {
            RecordingSubject subject = new RecordingSubject(emulation.backend.open(0, VaWindow.forVgpu(3)));
            byte[] pattern = allocateOnSource(subject);

            MigrationReport report =
                    migration(subject, emulation, MigrationFaults.NONE, reports).run();

            assertEquals(MigrationReport.Outcome.MIGRATED, report.outcome(), report.summary());
            assertEquals(List.of(report), reports, "the listener got the report");
            assertEquals(3, report.vgpu());
            assertEquals("gpu 0 (emulated)", report.from());
            assertEquals(BYTES, report.memSyncBytes());
            assertEquals(List.of("switchTo " + Emulation.gpu(1), "release 1 region(s)"), subject.hooks);
            assertGateOpen(subject.gate);
            byte[] copied = new byte[BYTES];
            try (VirtualGpu target = subject.switchedTo) {
                target.memcpyDtoH(
                        MemorySegment.ofArray(copied),
                        subject.log.regions().getFirst().address(),
                        BYTES);
            }
            assertArrayEquals(pattern, copied, "the target holds the source's bytes");
        }
    }

    @Test
    void aFailedReplayNeverSwitchesReopensTheGateAndClosesTheTarget() throws Exception {
        List<MigrationReport> reports = new ArrayList<>();
        MigrationFaults failReplay = MigrationFaultTest.at(
                FaultPoint.REPLAY_ALLOCATION, 0, MigrationFaultTest.throwing(ErrorCode.CUDA_ERROR_OUT_OF_MEMORY));
        try (Emulation emulation = new Emulation(2)) {
            RecordingSubject subject = new RecordingSubject(emulation.backend.open(0, VaWindow.forVgpu(3)));
            allocateOnSource(subject);

            MigrationException failure = assertThrows(
                    MigrationException.class,
                    () -> migration(subject, emulation, failReplay, reports).run());

            assertEquals(MigrationStep.REPLAY, failure.failedStep(), failure.getMessage());
            assertEquals(ErrorCode.CUDA_ERROR_OUT_OF_MEMORY, failure.code());
            assertEquals(List.of(failure.report()), reports, "the listener got the rolled-back report");
            assertEquals(List.of(), subject.hooks, "neither switched nor released");
            assertGateOpen(subject.gate);
            assertEquals(0, emulation.usedBytes(1), "the target's memory was freed");
            subject.source.close();
        }
    }

    @Test
    void anErrorOfTheAppsAsynchronousWorkStopsTheDrainAndIsHandedBackToTheApp() throws Exception {
        VgpuException asyncFailure = new VgpuException(ErrorCode.CUDA_ERROR_LAUNCH_FAILED, "an earlier launch failed");
        try (Emulation emulation = new Emulation(2)) {
            VirtualGpu failingSource = new ForwardingVirtualGpu(emulation.backend.open(0, VaWindow.forVgpu(3))) {
                @Override
                public void ctxSynchronize() {
                    throw asyncFailure;
                }
            };
            RecordingSubject subject = new RecordingSubject(failingSource);

            MigrationException failure = assertThrows(
                    MigrationException.class,
                    () -> migration(subject, emulation, MigrationFaults.NONE, new ArrayList<>())
                            .run());

            assertEquals(MigrationStep.DRAIN, failure.failedStep(), failure.getMessage());
            assertEquals(List.of("deferError"), subject.hooks);
            assertSame(asyncFailure, subject.deferred, "the app gets the source's own error");
            assertTrue(failure.getMessage().contains("rolled back at " + MigrationStep.DRAIN), failure.getMessage());
            assertGateOpen(subject.gate);
            assertEquals(0, emulation.usedBytes(1), "the target's memory was freed");
            failingSource.close();
        }
    }
}
