package org.vgpu.testbed;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * README's first command tells its story: testbed/story.sh, run as README says (it builds the SPANK bridge
 * and brings up its own testbed), passes its checks (those of scenario hook-home), shows what it promises and
 * tears its cluster down. Skipped, with the reason, where no testbed can run or the bridge cannot be built.
 */
@Tag("slurm")
class StoryTestbedTest {
    private static final Path BRIDGE_SOURCES =
            Path.of("..", "..", "slurm-spank-bridge").toAbsolutePath().normalize();

    @Test
    void theStoryShowsAJobOnBorrowedGpusWhoseVgpusTheHookBringsHomeAndTearsDown() throws Exception {
        String skipReason = SlurmTestbed.reasonItCannotRun();
        if (skipReason == null && !Files.isRegularFile(Path.of("/usr/include/slurm/spank.h"))) {
            skipReason = "story.sh builds the SPANK bridge in " + BRIDGE_SOURCES + ", which needs libslurm-dev";
        }
        assumeTrue(skipReason == null, skipReason);
        try (SlurmTestbed testbed = SlurmTestbed.fresh("vgpu-testbed-junit-story", Optional.empty())) {
            String output = testbed.assertStoryPasses();

            for (String shown : List.of(
                    "The GPUs are EMULATED",
                    "== Fill the nodes, then sbatch --gres=vgpu:3 ==",
                    "Borrowed GPUs now: 2",
                    "release -> first migration start: ",
                    "Borrowed GPUs now: 0",
                    "vgpu_migrations_total{direction=\"home\",outcome=\"done\"} 2.0",
                    "PASS: 3 of 3 vGPUs (1 local, 2 remote)",
                    "PASS: 3 of 3 vGPUs (3 local, 0 remote)",
                    "cluster stopped",
                    "The story ran in ")) {
                assertTrue(output.contains(shown), shown + "\n---\n" + output);
            }
            assertTrue(Files.notExists(testbed.dir()), "story.sh left " + testbed.dir());
        }
    }
}
