package org.vgpu.testbed;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Optional;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The grant under Slurm's own cgroup/v2 plugin (scenario constrain-devices-v2, Slurm 24.11): a GPU granted to a
 * running vgpu job is refused by Slurm's device program before the grant holder starts, opened while it runs and
 * refused again once it ends, while the job's own GPU stays open and another job's stays refused. Runs the whole
 * testbed under a kernel with cgroup v2 only (in-uml.sh: User-Mode Linux), since slurmd's cgroup/v2 plugin stops on
 * a kernel with v1 hierarchies; in the 24.11 run only. Skipped, with the reason, where the bridge was not built or no
 * 24.11 testbed can run.
 */
@Tag("slurm")
class ConstrainDevicesV2TestbedTest {
    private static SlurmTestbed testbed;
    private static String skipReason;

    @BeforeAll
    static void reserveTestbed() throws Exception {
        skipReason = SlurmTestbed.inSlurmRoot()
                ? SlurmTestbed.reasonBridgeTestbedCannotRun()
                : "Slurm's cgroup/v2 plugin runs in the 24.11 testbed (VGPU_TESTBED_SLURM=24.11), not on 22.05";
        if (skipReason != null) {
            System.err.println("ConstrainDevicesV2TestbedTest skipped: " + skipReason);
            return;
        }
        testbed = SlurmTestbed.fresh(
                "vgpu-testbed-junit-cgroup-v2", Optional.of(SlurmTestbed.BRIDGE), SlurmTestbed.Cgroups.V2);
    }

    @AfterAll
    static void tearDownTestbed() throws Exception {
        if (testbed != null) {
            testbed.close();
        }
    }

    @Test
    void slurmsDeviceProgramsRefuseAGpuBeforeItsGrantAllowItDuringAndRefuseItAfter() throws Exception {
        assumeTrue(skipReason == null, skipReason);
        testbed.assertScenarioPassesUnderOwnKernel("constrain-devices-v2");
    }
}
