package org.vgpu.bench.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.common.cli.SubcommandRunner;

/** {@code vgpu migration-bench} on the emulation with tiny settings: the sections asked for, and only those. */
class MigrationBenchCommandTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return SubcommandRunner.run(
                new MigrationBenchCommand(),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void measuresTheSectionsAskedForAndLabelsTheEmulation() {
        assertEquals(0, run("--sections", "per-call,replay", "--trials", "1", "--iterations", "200"), err.toString());
        String report = out.toString(StandardCharsets.UTF_8);
        assertTrue(report.contains("CPU EMULATION"), report);
        // per call: before any migration and after one, each from 5 interleaved pairs, with the ratios' range
        assertTrue(
                report.contains(
                        "wrapper recording (before any migration) vs the backend directly (medians of 5 interleaved"
                                + " pairs"),
                report);
        assertTrue(report.contains("after a migration, wrapper vs the backend directly"), report);
        assertEquals(
                4,
                report.lines()
                        .filter(
                                row -> row.matches(
                                        "  (empty kernel launch, async|4 KiB host->device copy) +[0-9.]+ us +[0-9.]+ us +[0-9.]+ [0-9.]+-[0-9.]+"))
                        .count(),
                report);
        assertTrue(
                report.contains("replay time (target opened, every live object recreated) vs calls the app made"),
                report);
        assertTrue(report.contains("1000000"), report);
        for (String skipped :
                new String[] {"migration lock alone", "mem-sync of", "app blocked by", "Lennard-Jones MD app"}) {
            assertFalse(report.contains(skipped), "'" + skipped + "' was not asked for:\n" + report);
        }
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void memSyncShowsTheProcesssFirstMigrationsApartFromTheTableOfFreshAndWarmedSources() {
        assertEquals(0, run("--sections", "mem-sync", "--trials", "1", "--full"), err.toString());
        String report = out.toString(StandardCharsets.UTF_8);
        assertTrue(
                report.lines()
                        .anyMatch(
                                row -> row.matches(
                                        "  this process's first 4 mem-syncs, 16384 regions of 4 KiB from"
                                                + " fresh sources .*: [0-9.]+ ms \\([0-9.]+\\), [0-9.]+ ms \\([0-9.]+\\), [0-9.]+ ms \\([0-9.]+\\), [0-9.]+ ms \\([0-9.]+\\)")),
                report);
        // the raw baseline samples one worker process per trial, each leg both ways
        assertTrue(
                report.lines()
                        .anyMatch(row -> row.matches("  raw by worker process \\(each way the median of 3 copies;"
                                + " the faster way by its median counts\\), GB/s: source device->host one copy [0-9.]+, pieces [0-9.]+;"
                                + " target host->device one copy [0-9.]+, pieces [0-9.]+")),
                report);
        // every region size once from fresh sources and once from warmed ones, each row ending in its one trial's
        // ratio, the warmed ones with their legs
        for (String size : new String[] {"4 KiB  ", "64 KiB ", "1 MiB  ", "16 MiB ", "64 MiB "}) {
            assertEquals(
                    2,
                    report.lines()
                            .filter(row -> row.startsWith("  " + size)
                                    && row.contains(" ms ")
                                    && row.matches(".* [0-9.]+ {3}[0-9]+\\.[0-9]{3}"))
                            .count(),
                    report);
        }
        assertEquals(
                5,
                report.lines()
                        .filter(row -> row.contains("legs: source gather"))
                        .count(),
                report);
        // each warmed row also against the raw read of the process it migrated from
        assertEquals(
                5,
                report.lines()
                        .filter(row -> row.matches(" +/ its own source's raw read \\([0-9.]+ GB/s by median,"
                                + " just before\\): [0-9.]+ [ !]  each trial: [0-9.]+"))
                        .count(),
                report);
        assertTrue(report.contains("goal: >= 80 % of the slower leg"), report);
        assertFalse(report.contains("per call"), report);
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void byDefaultTheTablesKeepTheirEndsAndFullAddsTheRowsBetween() {
        assertEquals(0, run("--sections", "replay,mem-sync", "--trials", "1"), err.toString());
        String report = out.toString(StandardCharsets.UTF_8);
        // replay: the fewest and most calls, and two counts of live objects
        for (String calls : new String[] {"1000", "1000000"}) {
            assertEquals(
                    1,
                    report.lines()
                            .filter(row -> row.matches("  " + calls + " +[0-9.]+ ms +[0-9.]+ ms"))
                            .count(),
                    report);
        }
        assertFalse(report.lines().anyMatch(row -> row.matches("  (10000|100000) +[0-9.]+ ms +[0-9.]+ ms")), report);
        assertEquals(
                4,
                report.lines()
                        .filter(row -> row.matches("  (100|1000) (allocations of 4 KiB|streams and events) .*"))
                        .count(),
                report);
        assertFalse(report.contains("10000 allocations"), report);
        // mem-sync: the smallest and the largest regions, from fresh and from warmed sources
        for (String size : new String[] {"4 KiB  ", "64 MiB "}) {
            assertEquals(
                    2,
                    report.lines()
                            .filter(row -> row.startsWith("  " + size) && row.contains(" ms "))
                            .count(),
                    report);
        }
        for (String size : new String[] {"64 KiB ", "1 MiB  ", "16 MiB "}) {
            assertFalse(report.lines().anyMatch(row -> row.startsWith("  " + size)), report);
        }
        assertTrue(report.contains("this process's first 4 mem-syncs, 16384 regions of 4 KiB"), report);
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void mdSplitsEachMigratedAppsRunsIntoBeforeDuringAndAfterItsMigration() {
        assertEquals(0, run("--sections", "md", "--trials", "1", "--md-runs", "4", "--md-scale", "1"), err.toString());
        String report = out.toString(StandardCharsets.UTF_8);
        assertFalse(report.contains("FAILED"), report);
        assertTrue(
                report.lines()
                        .anyMatch(row -> row.matches("  one run \\(of 4\\), median over runs and trials:"
                                + " never migrated on the source [0-9.]+ ms, on the target [0-9.]+ ms")),
                report);
        // Migrated rows compare the app with the mix of the unmigrated ones; those two have nothing to compare with.
        for (String never : new String[] {"source", "target"}) {
            assertTrue(
                    report.lines()
                            .anyMatch(row ->
                                    row.matches("  never migrated, on the " + never + " +[0-9.]+ ms +[0-9.]+ +- +-")),
                    report);
        }
        // The migration starts at the last launch of a run: at 50 % (of 4 runs) the first run is wholly before it and
        // the second overlaps it; the runs after depend on how fast it is (NaN: none).
        String time = "(?:[0-9.]+|NaN) ms";
        String ratio = "(?:[0-9.]+|NaN)";
        for (int share : new int[] {25, 50, 75}) {
            assertTrue(
                    report.lines()
                            .anyMatch(row -> row.matches("  migrated after " + share
                                    + " % of launches +[0-9.]+ ms +[0-9.]+" + " +[0-9]+\\.[0-9]{3} +[0-9.]+ ms")),
                    report);
            String before = share == 50 ? "[0-9.]+ ms \\(/ source [0-9.]+\\)" : time + " \\(/ source " + ratio + "\\)";
            assertTrue(
                    report.lines()
                            .anyMatch(row -> row.matches("  migrated after " + share + " % of launches +before "
                                    + before
                                    + "; during the migration [1-3].0 runs per trial, [0-9.]+ ms each; after " + time
                                    + " \\(/ target " + ratio + "\\)")),
                    report);
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void smallAllocationsShowTheirMemoryAndTheBlockedTimeOfTheirState() {
        assertEquals(0, run("--sections", "small-allocs", "--trials", "1"), err.toString());
        String report = out.toString(StandardCharsets.UTF_8);
        assertTrue(report.contains("10000 allocations of 4 KiB, device memory used"), report);
        assertTrue(report.lines().anyMatch(row -> row.matches("  vgpu \\(emulated device 1\\) +40\\.0 MiB")), report);
        assertTrue(report.contains("no baseline: no GPU under the emulation"), report);
        assertTrue(report.contains("app blocked by the migration of 10000 allocations of 4 KiB"), report);
        assertTrue(
                report.lines()
                        .anyMatch(row -> row.matches(
                                "  emulated device 1 +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+ ms +[0-9.]+ ms intact")),
                report);
        assertTrue(
                report.lines()
                        .anyMatch(row -> row.matches(
                                "    each trial, ms: blocked \\(replay, mem-sync\\) +[0-9.]+ \\([0-9.]+, [0-9.]+\\)"
                                        + " \\(warm-up, the process's first: [0-9.]+\\)")),
                report);
        assertTrue(report.contains("with --source worker only"), report);
        assertFalse(report.contains("replay time"), report);
    }

    @Test
    void badOptionsAreUsageErrorsThatNameTheValue() {
        assertEquals(2, run("--sections", "per-call,warp"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("got 'warp' in 'per-call,warp'"), err.toString());
        assertEquals(2, run("--sections", ""));
        assertEquals(2, run("--trials", "0"));
        assertEquals(2, run("--source", "cloud"));
        assertEquals(2, run("--staging-buffers", "9"));
        assertTrue(
                err.toString(StandardCharsets.UTF_8).contains("staging buffers must be 1 to 8, got 9"), err.toString());
        assertEquals(2, run("--chunk-mib", "2048"));
        assertTrue(
                err.toString(StandardCharsets.UTF_8).contains("migration chunk must be 4 KiB to 1 GiB, got 2147483648"),
                err.toString());
        assertFalse(out.toString(StandardCharsets.UTF_8).contains("per call"), out.toString());
    }
}
