package org.vgpu.migration;

import java.util.List;

/** The contract after three migrations (0 -> 1 -> 2 -> 0): handles remapped repeatedly, back on the first device. */
class MigratedThriceConformanceTest extends MigratableGpuConformanceTest {
    @Override
    protected List<Integer> migrationsBeforeEachTest() {
        return List.of(1, 2, 0);
    }
}
