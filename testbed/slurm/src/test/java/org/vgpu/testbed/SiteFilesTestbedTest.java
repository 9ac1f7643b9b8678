package org.vgpu.testbed;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Optional;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Slurm's daemons read the pieces {@code vgpu config render} gives a site with files of its own (scenario
 * site-files): slurm.conf includes vgpu.slurm.conf, plugstack.conf its folder with plugstack.conf.d/vgpu.conf, and
 * vgpu jobs run through them, with and without MUNGE. Skipped, with the reason, where the bridge was not built or no
 * testbed can run.
 */
@Tag("slurm")
class SiteFilesTestbedTest {

    private static SlurmTestbed testbed;
    private static String skipReason;

    @BeforeAll
    static void bringUpTestbed() throws Exception {
        skipReason = SlurmTestbed.reasonBridgeTestbedCannotRun();
        if (skipReason != null) {
            System.err.println("SiteFilesTestbedTest skipped: " + skipReason);
            return;
        }
        testbed = SlurmTestbed.withSitePieces("vgpu-testbed-junit-site", Optional.of(SlurmTestbed.BRIDGE));
        testbed.up();
    }

    @AfterAll
    static void tearDownTestbed() throws Exception {
        if (testbed != null) {
            testbed.close();
        }
    }

    @Test
    void vgpuJobsRunThroughTheRenderedPiecesThatTheSitesOwnFilesInclude() throws Exception {
        assumeTrue(skipReason == null, skipReason);
        testbed.assertScenarioPasses("site-files");
    }
}
