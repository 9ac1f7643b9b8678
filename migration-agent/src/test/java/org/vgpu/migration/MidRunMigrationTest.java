package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.workloads.LennardJonesWorkload;
import org.vgpu.runtime.workloads.PointerChaseWorkload;
import org.vgpu.runtime.workloads.Workload;
import org.vgpu.runtime.workloads.WorkloadResult;
import org.vgpu.runtime.workloads.Workloads;

/**
 * Unmodified workloads, migrated between their launches, read back bit for bit what an unmigrated
 * run reads back, pass their CPU checks, and leave nothing allocated on either device.
 */
class MidRunMigrationTest {
    private static final long SEED = 42;

    static Stream<Arguments> workloadsAndPoints() {
        Stream<Arguments> everyWorkloadHalfWay = Workloads.all().stream().map(workload -> Arguments.of(workload, 50));
        Stream<Arguments> mdAndChaseAtQuarters = Stream.of(25, 75)
                .flatMap(percent -> Stream.of(
                        Arguments.of(new LennardJonesWorkload(), percent),
                        Arguments.of(new PointerChaseWorkload(), percent)));
        return Stream.concat(everyWorkloadHalfWay, mdAndChaseAtQuarters);
    }

    @ParameterizedTest(name = "{0} migrated at {1} % of its launches")
    @MethodSource("workloadsAndPoints")
    void migratedMidRunReadsBackTheSameBits(Workload workload, int percent) {
        try (Emulation emulation = new Emulation(2)) {
            Transcript reference;
            WorkloadResult unmigrated;
            try (VirtualGpu plain = emulation.backend.open(0, VaWindow.forVgpu(3))) {
                reference = new Transcript(plain);
                unmigrated = workload.run(reference, 1, SEED);
            }
            long migrateAfter = Math.max(1, reference.launches() * percent / 100);
            try (MigratableGpu gpu = emulation.open(3, 0)) {
                MigrateAfterLaunches trigger =
                        new MigrateAfterLaunches(gpu, migrateAfter, Emulation.gpu(1), Runnable::run);
                Transcript migrated = new Transcript(trigger);
                WorkloadResult result = workload.run(migrated, 1, SEED);

                // On the app's thread, so the migration has finished when the launch that triggered it returns.
                MigrationReport report = trigger.migration().getNow(null);
                assertNotNull(report, "the migration happened");
                assertTrue(report.memSyncBytes() > 0, report.summary());
                assertEquals("gpu 1 (emulated)", gpu.location());
                assertTrue(result.passed(), result.errorSummary());
                assertEquals(unmigrated.comparison(), result.comparison());
                assertEquals(reference.launches(), migrated.launches());
                assertEquals(reference.digest(), migrated.digest(), "bytes read back differ from the unmigrated run");
                assertEquals(0, gpu.liveBytes());
            }
            assertEquals(0, emulation.usedBytes(0), "the source's memory was released");
            assertEquals(0, emulation.usedBytes(1), "the target's memory was released at close");
        }
    }
}
