package org.vgpu.tracker.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.time.Instant;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

/** {@link ReportFilter}: which rows {@code vgpu report --job/--user} keeps. */
class ReportFilterTest {
    private static final Instant AT = Instant.parse("2026-11-29T17:00:00Z");

    /**
     * Job 42 (alice) runs on n1 borrowing n2:3 and moved a vGPU once; job 7 (alice) moved a vGPU and ended; job 50
     * (bob) is held; job 9's migration is all that is left of it; n2 has idle GPUs.
     */
    private static final Report SAMPLE = new Report(
            Report.SCHEMA_VERSION,
            AT,
            List.of(new Report.AssemblyRow(42, "alice", "n1", 2, 1, 1, List.of(0), "released", AT, AT)),
            List.of(new Report.BorrowedRow(
                    42, "alice", "n1", List.of(0), 1, "n2", 3, 43L, false, "n2:1", AT, null, null, null)),
            List.of(migration(1, 42), migration(2, 7), migration(3, 9)),
            List.of(new Report.HeldRow(50, "bob", 3, "waiting")),
            List.of(new Report.IdleRow("n2", 2, List.of(0, 2))),
            List.of(new Report.EndedRow(7, "alice", "n3", 2, 1, "done", AT, null)));

    private static Report.MigrationRow migration(long id, long job) {
        return new Report.MigrationRow(id, job, 1, "n2:3", "n1:1", "home", AT, AT, 10L, 100L, "done");
    }

    @Test
    void noFilterIsTheWholeReport() {
        assertSame(SAMPLE, ReportFilter.ALL.apply(SAMPLE));
    }

    @Test
    void jobsKeepTheirRowsInEverySectionAndIdleGpusStay() {
        Report only42 = new ReportFilter(Set.of(42L), Set.of()).apply(SAMPLE);

        assertEquals(SAMPLE.assemblies(), only42.assemblies());
        assertEquals(SAMPLE.borrowed(), only42.borrowed());
        assertEquals(
                List.of(1L),
                only42.migrations().stream().map(Report.MigrationRow::id).toList());
        assertEquals(List.of(), only42.heldJobs());
        assertEquals(List.of(), only42.ended());
        assertEquals(SAMPLE.idleGpus(), only42.idleGpus());
        assertEquals(SAMPLE.generatedAt(), only42.generatedAt());

        Report several = new ReportFilter(Set.of(50L, 7L, 9L), Set.of()).apply(SAMPLE);
        assertEquals(
                List.of(2L, 3L),
                several.migrations().stream().map(Report.MigrationRow::id).toList());
        assertEquals(SAMPLE.heldJobs(), several.heldJobs());
        assertEquals(SAMPLE.ended(), several.ended());
        assertEquals(List.of(), several.assemblies());
    }

    @Test
    void usersKeepTheirJobsAndMigrationsOfJobsTheReportNamesThemFor() {
        Report alice = new ReportFilter(Set.of(), Set.of("alice")).apply(SAMPLE);

        assertEquals(SAMPLE.assemblies(), alice.assemblies());
        assertEquals(SAMPLE.ended(), alice.ended());
        // Job 9's owner is nowhere in the report: its migration is no known user's.
        assertEquals(
                List.of(1L, 2L),
                alice.migrations().stream().map(Report.MigrationRow::id).toList());
        assertEquals(List.of(), alice.heldJobs());

        Report bob = new ReportFilter(Set.of(), Set.of("bob", "nobody")).apply(SAMPLE);
        assertEquals(SAMPLE.heldJobs(), bob.heldJobs());
        assertEquals(List.of(), bob.assemblies());
        assertEquals(List.of(), bob.migrations());
    }

    @Test
    void jobsAndUsersTogetherKeepOnlyRowsMatchingBoth() {
        Report none = new ReportFilter(Set.of(50L), Set.of("alice")).apply(SAMPLE);

        assertEquals(List.of(), none.heldJobs());
        assertEquals(List.of(), none.assemblies());
        assertEquals(List.of(), none.ended());
        assertEquals(SAMPLE.idleGpus(), none.idleGpus());
    }
}
