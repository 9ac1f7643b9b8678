package org.vgpu.tracker.slurm;

import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Whom a holder job's GPU is for: the borrowing job's user and group and the account Slurm charges that job to, read
 * from {@code scontrol show job} ({@code UserId=alice(1000) GroupId=users(100)}, {@code Account=physics}). A cluster without accounting
 * prints {@code Account=(null)}: the borrower then has no account, and holders are charged to nobody's.
 *
 * @param user    the borrowing job's user name
 * @param uid     the borrowing job's user id
 * @param gid     the borrowing job's group id
 * @param account the account the borrowing job is charged to, when Slurm keeps accounts
 */
record Borrower(String user, long uid, long gid, Optional<String> account) {
    /** {@code alice(1000)}: the name and the id. */
    private static final Pattern NAME_AND_ID = Pattern.compile("(.*)\\((\\d{1,10})\\)");
    /** What scontrol prints for a job without an account. */
    private static final String NO_ACCOUNT = "(null)";

    Borrower {
        Objects.requireNonNull(user, "user");
        Objects.requireNonNull(account, "account");
    }

    /**
     * The borrower of job {@code job} from the output of {@code scontrol show job JOB}.
     *
     * @throws SlurmException when the output has no record of the job, or the record lacks {@code UserId=},
     *     {@code GroupId=} or {@code Account=}
     */
    static Borrower fromScontrol(long job, String text) {
        String source = "scontrol show job " + job;
        ScontrolRecords.Record record = ScontrolRecords.parse(source, text).stream()
                .filter(candidate -> candidate.first("JobId").equals(Optional.of(Long.toString(job))))
                .findFirst()
                .orElseThrow(() -> SlurmException.badOutput(source, "no record with JobId=" + job));
        Matcher user = NAME_AND_ID.matcher(record.require("UserId"));
        Matcher group = NAME_AND_ID.matcher(record.require("GroupId"));
        if (!user.matches() || !group.matches()) {
            throw SlurmException.badOutput(
                    source,
                    "UserId=" + record.require("UserId") + " GroupId=" + record.require("GroupId")
                            + " instead of NAME(ID) for both");
        }
        String account = record.require("Account");
        return new Borrower(
                user.group(1),
                Long.parseLong(user.group(2)),
                Long.parseLong(group.group(2)),
                account.isEmpty() || account.equals(NO_ACCOUNT) ? Optional.empty() : Optional.of(account));
    }

    /** How a holder's comment names the borrower: {@code user alice, account physics}. */
    String describe() {
        return "user " + user + account.map(name -> ", account " + name).orElse("");
    }
}
