package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationListener;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.NodeTargetResolver;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.workloads.VectorAddWorkload;
import org.vgpu.runtime.workloads.Workload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * {@code vgpu run}'s checks say where a check ran when a migration fell inside it, and only then: a workload that
 * moves its vGPU from emulated device 0 to device 1 halfway through its second step (as the tracker's hook may at
 * any call) passes there, and its line alone names both places. On the CPU emulation.
 */
class RunChecksTest {
    /** Vector add, whose vGPU moves to device 1 before the work of one chosen step. */
    private record MovingAt(long step, Workload inner) implements Workload {
        @Override
        public String name() {
            return inner.name();
        }

        @Override
        public String description() {
            return inner.description();
        }

        @Override
        public WorkloadResult run(VirtualGpu gpu, int scale, long seed) {
            if (seed == step) {
                ((MigratableGpu) gpu).migrate(new MigrationTarget.LocalGpu(1));
            }
            return inner.run(gpu, scale, seed);
        }
    }

    @Test
    void aCheckAMigrationFellInsideSaysWhereItBeganAndEnded() {
        EmulatedBackend backend = Backends.emulated(2);
        try (MigratableGpu gpu = new MigratableGpu(
                backend.open(0, VaWindow.forVgpu(0)),
                new MigrationTarget.LocalGpu(0),
                new NodeTargetResolver(backend),
                MigrationListener.NONE)) {
            RunCommand.VgpuChecks checks =
                    RunCommand.checkOne(gpu, 0, List.of(new MovingAt(2, new VectorAddWorkload())), 1, 3, 1, "");
            assertEquals(Set.of(), checks.failed(), String.join("\n", checks.lines()));
            assertEquals(3, checks.lines().size());
            assertTrue(
                    checks.lines().get(0).startsWith("PASS  vgpu 0  step 1  vector-add"),
                    checks.lines().get(0));
            assertTrue(
                    checks.lines().get(1).contains("(moved during the check: gpu 0 (emulated) -> gpu 1 (emulated))"),
                    checks.lines().get(1));
            assertEquals(
                    1,
                    checks.lines().stream()
                            .filter(line -> line.contains("moved during"))
                            .count(),
                    "only the check the move fell inside says so: " + checks.lines());
            assertEquals("gpu 1 (emulated)", gpu.location());
        }
    }
}
