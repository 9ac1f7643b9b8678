package org.vgpu.testbed;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Optional;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Slurm's accounting charges a borrowed GPU to the borrowing job's user and account (scenario accounting): a testbed
 * with slurmdbd on a MariaDB of its own, the SPANK bridge and the tracker; sacct shows the holders as the borrower's,
 * under the borrower's account, and a user's own job in the lend partition is refused by vgpu_job_submit.lua; and
 * sacct's record of a workload that ran there, fed to vgpu simulate, gives the starts Slurm gave (scenario
 * simulator-agrees). Skipped, with the reason, where the bridge was not built, no testbed can run, or slurmdbd or
 * MariaDB is
 * missing.
 */
@Tag("slurm")
class AccountingTestbedTest {

    private static SlurmTestbed testbed;
    private static String skipReason;

    @BeforeAll
    static void bringUpTestbed() throws Exception {
        skipReason = SlurmTestbed.reasonAccountingCannotRun();
        if (skipReason != null) {
            System.err.println("AccountingTestbedTest skipped: " + skipReason);
            return;
        }
        testbed = SlurmTestbed.withAccounting("vgpu-testbed-junit-accounting", Optional.of(SlurmTestbed.BRIDGE));
        testbed.up();
    }

    @AfterAll
    static void tearDownTestbed() throws Exception {
        if (testbed != null) {
            testbed.close();
        }
    }

    @Test
    void sacctChargesBorrowedGpusToTheBorrowersUserAndAccountAndTheLendPartitionRefusesUsers() throws Exception {
        assumeTrue(skipReason == null, skipReason);
        testbed.assertScenarioPasses("accounting");
    }

    /** vgpu simulate's Slurm starts a workload's jobs when the real one did (its sacct record is the bridge). */
    @Test
    void theSimulatorStartsJobsWhenSlurmDid() throws Exception {
        assumeTrue(skipReason == null, skipReason);
        // its workload runs about 3 minutes, then sacct and the simulation
        testbed.assertScenarioPassesWithin(420, "simulator-agrees");
    }
}
