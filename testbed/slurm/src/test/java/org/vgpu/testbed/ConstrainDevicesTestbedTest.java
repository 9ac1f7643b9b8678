package org.vgpu.testbed;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A GPU granted to a running vgpu job under Slurm's task/cgroup with ConstrainDevices=yes (scenario
 * constrain-devices): refused before the grant holder starts, opened while it runs, refused again once
 * it ends. On 22.05 Slurm's cgroup/v1 plugin, on 24.11 its cgroup/v2 plugin (device programs). Skipped, with the
 * reason, where the bridge was not built, no testbed can run, or the machine has no writable cgroup v1 devices
 * controller (22.05) or no cgroup2 file system (24.11).
 */
@Tag("slurm")
class ConstrainDevicesTestbedTest {
    private static final Path DEVICES_CONTROLLER = Path.of("/sys/fs/cgroup/devices");

    private static SlurmTestbed testbed;
    private static String skipReason;

    @BeforeAll
    static void bringUpTestbed() throws Exception {
        skipReason = SlurmTestbed.reasonBridgeTestbedCannotRun();
        if (skipReason == null && SlurmTestbed.inSlurmRoot() && !cgroup2()) {
            skipReason = "the kernel offers no cgroup2 file system (/proc/filesystems), which Slurm's cgroup/v2"
                    + " plugin needs";
        }
        if (skipReason == null && SlurmTestbed.inSlurmRoot() && hybrid()) {
            skipReason = "this machine has cgroup v1 hierarchies (/proc/self/cgroup), and slurmd's cgroup/v2 plugin"
                    + " stops on them ('fatal: Hybrid mode is not supported'); ConstrainDevicesV2TestbedTest runs the"
                    + " grant under cgroup/v2 on a kernel of its own";
        }
        if (skipReason == null && !SlurmTestbed.inSlurmRoot() && !writableDevicesController()) {
            skipReason = DEVICES_CONTROLLER + " is no writable cgroup v1 devices controller (the testbed runs"
                    + " Slurm's cgroup/v1 plugin; the bridge's cgroup v2 admission is tested by"
                    + " slurm-spank-bridge/tests/cgroup-v2-test.sh)";
        }
        if (skipReason != null) {
            System.err.println("ConstrainDevicesTestbedTest skipped: " + skipReason);
            return;
        }
        testbed = SlurmTestbed.fresh("vgpu-testbed-junit-cgroups", Optional.of(SlurmTestbed.BRIDGE), true);
        testbed.up();
    }

    private static boolean cgroup2() throws IOException {
        return Files.readAllLines(Path.of("/proc/filesystems")).stream()
                .anyMatch(line -> line.strip().endsWith("cgroup2"));
    }

    private static boolean hybrid() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/cgroup")).stream().anyMatch(line -> !line.startsWith("0::"));
    }

    private static boolean writableDevicesController() throws IOException {
        return Files.isRegularFile(DEVICES_CONTROLLER.resolve("devices.allow")) && Files.isWritable(DEVICES_CONTROLLER);
    }

    @AfterAll
    static void tearDownTestbed() throws Exception {
        if (testbed != null) {
            testbed.close();
        }
    }

    @Test
    void aGrantHolderAdmitsItsGpuIntoTheRunningJobsDevicesCgroupForItsLifetime() throws Exception {
        assumeTrue(skipReason == null, skipReason);
        testbed.assertScenarioPasses("constrain-devices");
    }
}
