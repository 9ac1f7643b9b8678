package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

import org.junit.jupiter.api.Test;

class BorrowerTest {
    private static String capture(String path) throws IOException {
        try (InputStream in = BorrowerTest.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IOException("no test resource " + path);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void aUsersJobOnSlurm2411WithAccountingIsChargedToItsAccount() throws IOException {
        // scontrol show job of a job user nobody submitted in the accounting testbed (VGPU_TESTBED_ACCOUNTING=yes).
        Borrower borrower = Borrower.fromScontrol(1, capture("slurm-24.11/accounting/scontrol-show-job.txt"));

        assertEquals(new Borrower("nobody", 65534, 65534, Optional.of("physics")), borrower);
        assertEquals("user nobody, account physics", borrower.describe());
    }

    @Test
    void aJobOnAClusterWithoutAccountingHasNoAccount() throws IOException {
        // Slurm 22.05 without accounting prints Account=(null); the captures hold several jobs: job 2 is picked.
        Borrower borrower = Borrower.fromScontrol(2, capture("assembled/scontrol-show-job-d.txt"));

        assertEquals(new Borrower("root", 0, 0, Optional.empty()), borrower);
        assertEquals("user root", borrower.describe());
    }

    @Test
    void aUserOrGroupWithoutItsIdIsRefusedSayingWhatWasExpected() {
        SlurmException refused = assertThrows(
                SlurmException.class,
                () -> Borrower.fromScontrol(7, "JobId=7 UserId=alice GroupId=users(100) Account=(null)\n"));

        assertTrue(
                refused.getMessage().contains("UserId=alice GroupId=users(100) instead of NAME(ID)"),
                refused.getMessage());
    }

    @Test
    void outputWithoutTheJobIsRefusedNamingIt() {
        SlurmException refused = assertThrows(
                SlurmException.class, () -> Borrower.fromScontrol(7, "JobId=8 UserId=root(0) Account=(null)\n"));

        assertTrue(refused.getMessage().contains("scontrol show job 7"), refused.getMessage());
        assertTrue(refused.getMessage().contains("no record with JobId=7"), refused.getMessage());
    }

    @Test
    void aRecordWithoutAccountIsRefusedNamingTheField() {
        SlurmException refused = assertThrows(
                SlurmException.class,
                () -> Borrower.fromScontrol(7, "JobId=7 UserId=alice(1000) GroupId=users(100)\n"));

        assertTrue(refused.getMessage().contains("no Account= field"), refused.getMessage());
    }
}
