package org.vgpu.testbed;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The Slurm testbed with the SPANK bridge that slurm-spank-bridge built in this build, loaded
 * through the rendered plugstack.conf: first without a tracker (vgpu jobs fail closed), then with
 * {@code vgpu tracker} assembling vgpu jobs from scattered idle GPUs, with and without borrowing,
 * across a tracker crash, against bad input, and with MUNGE authentication; last, the bridge alone
 * against a fake tracker (scenario spank-bridge). Skipped, with the reason, where the bridge was not
 * built (no C compiler or no Slurm headers) or no testbed can run.
 */
@Tag("slurm")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SpankBridgeTestbedTest {
    private static final Path BRIDGE = Path.of("..", "..", "slurm-spank-bridge", "vgpu_spank.so").toAbsolutePath().normalize();
    private static final SlurmTestbed TESTBED = new SlurmTestbed(Path.of("/tmp/vgpu-testbed-junit-spank"), 17980,
            Optional.of(BRIDGE));
    private static final Path BORROW_DELAY = Path.of("/tmp/vgpu-testbed-junit-spank-borrow-delay");
    private static final Path LOCAL_ONLY_DELAY = Path.of("/tmp/vgpu-testbed-junit-spank-local-only-delay");
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
    @Order(1)
    void bridgeLetsPlainJobsRunAndFailsVgpuJobsClosedWithoutATracker() throws Exception {
        TESTBED.assertScenarioPasses("spank-fail-closed");
    }

    @Test
    @Order(2)
    void trackerStartsAVgpuJobOnOneLocalAndTwoBorrowedGpusAndLeavesNoHolder() throws Exception {
        TESTBED.assertScenarioPasses("tracker-borrow", BORROW_DELAY.toString());
    }

    @Test
    @Order(3)
    void withoutBorrowingTheSameJobWaitsForANodeWithThreeIdleGpus() throws Exception {
        TESTBED.assertScenarioPasses("tracker-no-borrowing", LOCAL_ONLY_DELAY.toString());
        // The figure the closing note quotes: what borrowing saves this job here.
        if (Files.exists(BORROW_DELAY)) {
            System.err.printf("vgpu:3 start delay on 3 nodes with 1 idle GPU each: borrowing on %s s, off %s s"
                    + " (until a node frees 3 GPUs)%n", Files.readString(BORROW_DELAY).strip(),
                    Files.readString(LOCAL_ONLY_DELAY).strip());
        }
    }

    @Test
    @Order(4)
    void aTrackerKilledMidJobComesBackAgreeingWithSlurm() throws Exception {
        TESTBED.assertScenarioPasses("tracker-restart");
    }

    @Test
    @Order(5)
    void trackerRefusesBadInputClearlyAndKeepsServing() throws Exception {
        TESTBED.assertScenarioPasses("tracker-bad-input");
    }

    @Test
    @Order(6)
    void withMungeOnlyRequestsWithTheSendersOwnGoodCredentialAreAnswered() throws Exception {
        TESTBED.assertScenarioPasses("tracker-munge");
    }

    @Test
    @Order(7)
    void theBridgeAloneAgainstAFakeTrackerExportsAssembliesAndFailsClosed() throws Exception {
        // slurm-spank-bridge/tests/slurm-it.sh runs the same scenario on a testbed of its own
        TESTBED.assertScenarioPasses("spank-bridge");
    }
}
