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
 * it ends. On both versions under Slurm's cgroup/v1 plugin where the machine has a writable cgroup v1 devices
 * controller; on 24.11 under its cgroup/v2 plugin (device programs) where the kernel has cgroup v2 only. Skipped, with
 * the reason, where the bridge was not built, no testbed can run, or the machine offers neither.
 */
@Tag("slurm")
class ConstrainDevicesTestbedTest {
    private static final Path DEVICES_CONTROLLER = Path.of("/sys/fs/cgroup/devices");

    private static SlurmTestbed testbed;
    private static String skipReason;

    @BeforeAll
    static void bringUpTestbed() throws Exception {
        skipReason = SlurmTestbed.reasonBridgeTestbedCannotRun();
        if (skipReason != null) {
            System.err.println("ConstrainDevicesTestbedTest skipped: " + skipReason);
            return;
        }
        SlurmTestbed.Cgroups cgroups;
        if (writableDevicesController()) {
            cgroups = SlurmTestbed.Cgroups.V1;
        } else if (SlurmTestbed.inSlurmRoot() && cgroup2() && !hybrid()) {
            cgroups = SlurmTestbed.Cgroups.V2;
        } else {
            skipReason = DEVICES_CONTROLLER + " is no writable cgroup v1 devices controller (for Slurm's cgroup/v1"
                    + " plugin), and "
                    + (SlurmTestbed.inSlurmRoot()
                            ? "the kernel has no cgroup2 file system of its own (for 24.11's cgroup/v2 plugin, which"
                                    + " stops on a machine with cgroup v1 hierarchies: 'fatal: Hybrid mode is not"
                                    + " supported'; ConstrainDevicesV2TestbedTest runs it on a kernel of its own)"
                            : "22.05's testbed runs no cgroup/v2 plugin (the bridge's cgroup v2 admission is tested by"
                                    + " slurm-spank-bridge/tests/cgroup-v2-test.sh)");
            System.err.println("ConstrainDevicesTestbedTest skipped: " + skipReason);
            return;
        }
        testbed = SlurmTestbed.fresh("vgpu-testbed-junit-cgroups", Optional.of(SlurmTestbed.BRIDGE), cgroups);
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
