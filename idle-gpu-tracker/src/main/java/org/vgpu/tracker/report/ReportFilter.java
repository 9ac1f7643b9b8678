package org.vgpu.tracker.report;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Which jobs {@code vgpu report} shows, as sacct's {@code --jobs} and {@code --user} select: a row of a job stays when
 * the job is one of {@code jobs} (any job when empty) and its owner one of {@code users} (anyone when empty). A
 * migration names its job alone; its owner is the one the report's other rows of that job name, and a migration of
 * a job no other row names (ended and forgotten) has no known owner, so a {@code users} filter drops it. Idle GPUs
 * are no job's: they stay whatever the filter, as the state the shown jobs wait in.
 */
public record ReportFilter(Set<Long> jobs, Set<String> users) {
    /** Every job. */
    public static final ReportFilter ALL = new ReportFilter(Set.of(), Set.of());

    public ReportFilter {
        jobs = Set.copyOf(jobs);
        users = Set.copyOf(users);
    }

    public Report apply(Report report) {
        if (jobs.isEmpty() && users.isEmpty()) {
            return report;
        }
        Map<Long, String> owners = new HashMap<>();
        report.assemblies().forEach(row -> owners.put(row.job(), row.user()));
        report.heldJobs().forEach(row -> owners.put(row.job(), row.user()));
        report.ended().forEach(row -> owners.putIfAbsent(row.job(), row.user()));
        return new Report(
                report.schemaVersion(),
                report.generatedAt(),
                kept(report.assemblies(), row -> shows(row.job(), row.user())),
                kept(report.borrowed(), row -> shows(row.job(), row.user())),
                kept(report.migrations(), row -> shows(row.job(), owners.get(row.job()))),
                kept(report.heldJobs(), row -> shows(row.job(), row.user())),
                report.idleGpus(),
                kept(report.ended(), row -> shows(row.job(), row.user())));
    }

    /** Whether a row of {@code job}, owned by {@code user} (null: not known), is shown. */
    private boolean shows(long job, String user) {
        return (jobs.isEmpty() || jobs.contains(job)) && (users.isEmpty() || (user != null && users.contains(user)));
    }

    private static <T> List<T> kept(List<T> rows, Predicate<T> shown) {
        return rows.stream().filter(shown).toList();
    }
}
