package org.vgpu.tracker.slurm;

import java.util.Objects;
import java.util.Optional;

/**
 * Whom a holder job's GPU is for: the borrowing job's user and the account Slurm charges that job to, read from
 * {@code scontrol show job} ({@code UserId=alice(1000)}, {@code Account=physics}). A cluster without accounting
 * prints {@code Account=(null)}: the borrower then has no account, and holders are charged to nobody's.
 *
 * @param user    the borrowing job's user name
 * @param account the account the borrowing job is charged to, when Slurm keeps accounts
 */
record Borrower(String user, Optional<String> account) {
    /** What scontrol prints for a job without an account. */
    private static final String NO_ACCOUNT = "(null)";

    Borrower {
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(account, "account");
    }

    /**
     * The borrower of job {@code job} from the output of {@code scontrol show job JOB}.
     *
     * @throws SlurmException when the output has no record of the job, or the record lacks {@code UserId=} or
     *     {@code Account=}
     */
    static Borrower fromScontrol(long job, String text) {
        String source = "scontrol show job " + job;
        ScontrolRecords.Record record = ScontrolRecords.parse(source, text).stream()
                .filter(candidate -> candidate.first("JobId").equals(Optional.of(Long.toString(job))))
                .findFirst()
                .orElseThrow(() -> SlurmException.badOutput(source, "no record with JobId=" + job));
        // UserId=alice(1000): the name, without the uid.
        String user = record.require("UserId").replaceFirst("\\(\\d+\\)$", "");
        String account = record.require("Account");
        return new Borrower(
                user, account.isEmpty() || account.equals(NO_ACCOUNT) ? Optional.empty() : Optional.of(account));
    }

    /** How a holder's comment names the borrower: {@code user alice, account physics}. */
    String describe() {
        return "user " + user + account.map(name -> ", account " + name).orElse("");
    }
}
