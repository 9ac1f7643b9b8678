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
 * across a tracker crash, against bad input, and with MUNGE authentication; the migration hook moving vGPUs home,
 * draining a lender, across a tracker crash, a move failing at its target, later job steps, and bad input to the
 * hook; the bridge alone against a fake tracker (scenario spank-bridge); then programs of one's own under vgpu run
 * (README's, and MPJ Express ranks where libmpj-java is installed), and a step of several tasks sharing the job's
 * vGPUs. Skipped, with the reason, where the bridge was not
 * built (no C compiler or no Slurm headers) or no testbed can run.
 */
@Tag("slurm")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SpankBridgeTestbedTest {
    /** Made once the testbed can run here, so a skipped run leaves nothing behind. */
    private static SlurmTestbed testbed;

    private static String skipReason;

    @BeforeAll
    static void bringUpTestbed() throws Exception {
        skipReason = SlurmTestbed.reasonBridgeTestbedCannotRun();
        if (skipReason != null) {
            System.err.println("SpankBridgeTestbedTest skipped: " + skipReason);
            return;
        }
        testbed = SlurmTestbed.fresh("vgpu-testbed-junit-spank", Optional.of(SlurmTestbed.BRIDGE));
        testbed.up();
    }

    @AfterAll
    static void tearDownTestbed() throws Exception {
        if (testbed != null) {
            testbed.close();
        }
    }

    @BeforeEach
    void skipWithoutTestbed() {
        assumeTrue(skipReason == null, skipReason);
    }

    @Test
    @Order(1)
    void bridgeLetsPlainJobsRunAndFailsVgpuJobsClosedWithoutATracker() throws Exception {
        testbed.assertScenarioPasses("spank-fail-closed");
    }

    @Test
    @Order(2)
    void trackerStartsAVgpuJobOnOneLocalAndTwoBorrowedGpusAndLeavesNoHolder() throws Exception {
        testbed.assertScenarioPasses("tracker-borrow", borrowDelay().toString());
    }

    @Test
    @Order(3)
    void withoutBorrowingTheSameJobWaitsForANodeWithThreeIdleGpus() throws Exception {
        testbed.assertScenarioPasses("tracker-no-borrowing", localOnlyDelay().toString());
        // The figure the closing note quotes: what borrowing saves this job here.
        if (Files.exists(borrowDelay())) {
            System.err.printf(
                    "vgpu:3 start delay on 3 nodes with 1 idle GPU each: borrowing on %s s, off %s s"
                            + " (until a node frees 3 GPUs)%n",
                    Files.readString(borrowDelay()).strip(),
                    Files.readString(localOnlyDelay()).strip());
        }
    }

    @Test
    @Order(4)
    void aTrackerKilledMidJobComesBackAgreeingWithSlurm() throws Exception {
        testbed.assertScenarioPasses("tracker-restart");
    }

    @Test
    @Order(5)
    void trackerRefusesBadInputClearlyAndKeepsServing() throws Exception {
        testbed.assertScenarioPasses("tracker-bad-input");
    }

    @Test
    @Order(6)
    void withMungeOnlyRequestsWithTheSendersOwnGoodCredentialAreAnswered() throws Exception {
        testbed.assertScenarioPasses("tracker-munge");
    }

    @Test
    @Order(7)
    void theHookMovesBothBorrowedVgpusHomeWhenTheJobsNodeFreesGpus() throws Exception {
        testbed.assertScenarioPasses("hook-home");
    }

    @Test
    @Order(8)
    void aDrainOfALenderMovesItsVgpuToAnotherLenderWhileTheJobRuns() throws Exception {
        testbed.assertScenarioPasses("hook-drain");
    }

    @Test
    @Order(9)
    void aTrackerKilledMidMigrationComesBackAgreeingWithSlurmAndTheJob() throws Exception {
        testbed.assertScenarioPasses("hook-restart");
    }

    @Test
    @Order(10)
    void aMigrationThatFailsAtItsTargetLeavesTheJobRunningRemoteAndTheHookBacksOff() throws Exception {
        testbed.assertScenarioPasses("hook-fault");
    }

    @Test
    @Order(11)
    void laterJobStepsOpenTheBorrowedVgpusAgainAlsoAfterOneMovedHome() throws Exception {
        testbed.assertScenarioPasses("second-step");
    }

    @Test
    @Order(12)
    void theHookRefusesBadInputAndAVanishedAgentClearlyAndLosesNothing() throws Exception {
        testbed.assertScenarioPasses("hook-bad-input");
    }

    @Test
    @Order(13)
    void anAdminsCancelOfAHolderEvacuatesItsVgpuOrTellsTheJobItIsLost() throws Exception {
        testbed.assertScenarioPasses("holder-cancel");
    }

    @Test
    @Order(14)
    void theBridgeAloneAgainstAFakeTrackerExportsAssembliesAndFailsClosed() throws Exception {
        // slurm-spank-bridge/tests/slurm-it.sh runs the same scenario on a testbed of its own
        testbed.assertScenarioPasses("spank-bridge");
    }

    @Test
    @Order(15)
    void readmesProgramRunsUnderVgpuRunOnOneLocalAndTwoBorrowedVgpusAndACrashsStatusComesThrough() throws Exception {
        testbed.assertScenarioPasses("run-program");
    }

    @Test
    @Order(16)
    void mpjRanksOnTwoLocalAndOneBorrowedVgpusMatchASingleRankWhileTheHookMovesTheBorrowedOneHome() throws Exception {
        assumeTrue(
                Files.isRegularFile(Path.of("/usr/share/java/mpj.jar")),
                "MPJ Express is not installed (no /usr/share/java/mpj.jar): apt-get install libmpj-java");
        assumeTrue(
                !SlurmTestbed.inSlurmRoot(),
                "MPJ ranks run on this machine's Slurm only: Debian 13's root, where Slurm 24.11 runs, has no"
                        + " libmpj-java");
        testbed.assertScenarioPasses("mpj-ranks");
    }

    @Test
    @Order(17)
    void eachTaskOfAStepGetsItsOwnShareAndItsAgentAloneMovesItsVgpu() throws Exception {
        testbed.assertScenarioPasses("task-shares");
    }

    /** Where tracker-borrow writes the vgpu:3 job's start delay (inside the testbed, removed with it). */
    private static Path borrowDelay() {
        return testbed.dir().resolve("borrow-delay");
    }

    private static Path localOnlyDelay() {
        return testbed.dir().resolve("local-only-delay");
    }
}
