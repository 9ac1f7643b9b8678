package org.vgpu.testbed;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The Slurm testbed with the SPANK bridge that slurm-spank-bridge built in this build, loaded
 * through the rendered plugstack.conf. Until the tracker exists, it shows the bridge installed and
 * failing vgpu jobs closed. Skipped, with the reason, where the bridge was not built (no C
 * compiler or no Slurm headers) or no testbed can run.
 */
@Tag("slurm")
class SpankBridgeTestbedTest {
    private static final Path BRIDGE = Path.of("..", "slurm-spank-bridge", "vgpu_spank.so").toAbsolutePath().normalize();
    private static final SlurmTestbed TESTBED = new SlurmTestbed(Path.of("/tmp/vgpu-testbed-junit-spank"), 17980,
            Optional.of(BRIDGE));
    private static String skipReason;

    @BeforeAll
    static void bringUpTestbed() throws Exception {
        skipReason = SlurmTestbed.reasonItCannotRun();
        if (skipReason == null && !Files.isRegularFile(BRIDGE)) {
            skipReason = "the SPANK bridge " + BRIDGE + " was not built (slurm-spank-bridge needs cc and libslurm-dev)";
        }
        if (skipReason != null) {
            System.err.println("SpankBridgeTestbedTest skipped: " + skipReason);
            return;
        }
        TESTBED.up();
    }

    @AfterAll
    static void tearDownTestbed() throws Exception {
        if (skipReason == null) {
            TESTBED.close();
        }
    }

    @BeforeEach
    void skipWithoutTestbed() {
        assumeTrue(skipReason == null, skipReason);
    }

    @Test
    void bridgeLetsPlainJobsRunAndFailsVgpuJobsClosedWithoutATracker() throws Exception {
        TESTBED.assertScenarioPasses("spank-fail-closed");
    }
}
