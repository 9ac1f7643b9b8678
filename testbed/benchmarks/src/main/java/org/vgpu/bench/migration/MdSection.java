package org.vgpu.bench.migration;

import static org.vgpu.bench.migration.BenchFigures.median;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrateAfterLaunches;
import org.vgpu.migration.MigrationReport;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.Transcript;
import org.vgpu.runtime.workloads.LennardJonesWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * The {@code md} section: an MD app (back-to-back Lennard-Jones runs) migrated by a thread of its
 * own, as the agent migrates, at 25/50/75 % of its launches against the app never moved.
 */
final class MdSection {
    private MdSection() {}

    /**
     * The MD app: {@code mdRuns} back-to-back runs of the Lennard-Jones workload on one vGPU (a long
     * MD job's successive segments), migrated at 25/50/75 % of its launches against the app never
     * moved, on the source and on the target. The migration runs on a thread of its own, as the
     * agent's does: the app keeps launching while the target is opened and the source released, and
     * waits only while the lock is shut. Each run of a first app, never migrated, is checked against
     * its CPU reference after that app has finished, outside its time: the double-precision rerun of
     * the simulation is most of a run's wall time, and its speed moves by a fifth with the load on the
     * host's other cores (measured on the H200 machines: the app thread's CPU time equals its wall
     * time in each case), which buried the GPU's share. An MD code's own time has no such rerun in
     * it. Every other app must read back the same bits as that one.
     */
    static void measure(Placement placement, BenchSettings settings, PrintStream out, String label) {
        LennardJonesWorkload workload = new LennardJonesWorkload();
        MdRun unmigrated;
        try (MigratableGpu gpu = placement.openOnSource(7)) {
            unmigrated = mdRun(gpu, workload, settings, 0, placement.target(), out, true);
        }
        long launches = unmigrated.launches();
        // Each row: whether the app starts on the target, and after how many launches it moves there (0: never).
        String[] names = {
            "never migrated, on the source",
            "never migrated, on the target",
            "migrated after 25 % of launches",
            "migrated after 50 % of launches",
            "migrated after 75 % of launches"
        };
        boolean[] onTarget = {false, true, false, false, false};
        long[] migrateAfter = {0, 0, launches / 4, launches / 2, launches * 3 / 4};
        double[][] appMillis = new double[names.length][settings.trials()];
        double[][] blockedMillis = new double[names.length][settings.trials()];
        // each row's single runs over all trials, by where they ran relative to the migration
        List<Map<MdPhase, List<MdStep>>> steps = new ArrayList<>();
        for (int row = 0; row < names.length; row++) {
            Map<MdPhase, List<MdStep>> phases = new EnumMap<>(MdPhase.class);
            for (MdPhase phase : MdPhase.values()) {
                phases.put(phase, new ArrayList<>());
            }
            steps.add(phases);
        }
        // Rounds over all rows, after a warm-up round, so JIT warm-up and drift spread over every row.
        for (int round = -1; round < settings.trials(); round++) {
            for (int row = 0; row < names.length; row++) {
                try (MigratableGpu gpu = onTarget[row]
                        ? LocalPlacement.migratable(placement.local(), 7, placement.targetDevice(), placement.config())
                        : placement.openOnSource(7)) {
                    MdRun run = mdRun(gpu, workload, settings, migrateAfter[row], placement.target(), out, false);
                    if (!run.digest().equals(unmigrated.digest())) {
                        out.printf(
                                "  MD app FAILED: %s read back other bits than the app never migrated%n", names[row]);
                    }
                    if (round >= 0) {
                        appMillis[row][round] = run.millis();
                        blockedMillis[row][round] = run.migration() == null
                                ? 0
                                : run.migration().blocked().toNanos() / 1e6;
                        for (MdStep step : run.steps()) {
                            steps.get(row).get(step.phase()).add(step);
                        }
                    }
                }
            }
        }
        out.printf(
                "%nLennard-Jones MD app: %d runs of scale %d back to back, %d launches; migrated by an agent thread"
                        + " while the app runs; the app's time (uploads, launches, read-backs, the waits for the migration),"
                        + " median of %d; each run of a first app, never migrated, checked against its CPU reference after it"
                        + " ended, and every app bit for bit against that one%s%n",
                settings.mdRuns(), settings.mdScale(), launches, settings.trials(), label);
        out.printf("  %-34s %12s %10s %12s %12s%n", "app", "time", "/ source", "/ expected", "app blocked");
        double source = median(appMillis[0]);
        double target = median(appMillis[1]);
        for (int row = 0; row < names.length; row++) {
            double millis = median(appMillis[row]);
            // Moved after a share f of its launches, the app would take f of the source app's time and
            // the rest of the target app's if the migration cost nothing.
            double share = (double) migrateAfter[row] / launches;
            String expected = migrateAfter[row] == 0
                    ? "-"
                    : String.format("%.3f", millis / (share * source + (1 - share) * target));
            String blocked = migrateAfter[row] == 0 ? "-" : String.format("%.2f ms", median(blockedMillis[row]));
            out.printf("  %-34s %9.2f ms %10.3f %12s %12s%n", names[row], millis, millis / source, expected, blocked);
        }
        // Where a migrated app's time goes: its runs before the migration against the app never moved
        // on the source, the runs the migration overlapped (target opened, state copied, source
        // released, all beside the app), and its runs after against the app never moved on the target.
        double sourceRun = MdStep.median(steps.get(0).get(MdPhase.BEFORE));
        double targetRun = MdStep.median(steps.get(1).get(MdPhase.BEFORE));
        out.printf(
                "  one run (of %d), median over runs and trials: never migrated on the source %.2f ms, on the target %.2f ms%n",
                settings.mdRuns(), sourceRun, targetRun);
        for (int row = 2; row < names.length; row++) {
            Map<MdPhase, List<MdStep>> phases = steps.get(row);
            double before = MdStep.median(phases.get(MdPhase.BEFORE));
            double after = MdStep.median(phases.get(MdPhase.AFTER));
            List<MdStep> overlapped = phases.get(MdPhase.DURING);
            out.printf(
                    "  %-34s before %.2f ms (/ source %.3f); during the migration %.1f runs per trial, %.2f ms each;"
                            + " after %.2f ms (/ target %.3f)%n",
                    names[row],
                    before,
                    before / sourceRun,
                    (double) overlapped.size() / settings.trials(),
                    MdStep.median(overlapped),
                    after,
                    after / targetRun);
        }
        out.printf("  expected: migrated apps between the two, nearer the target the earlier they move;"
                + " / expected: over the mix of the two by the share of launches made before the move%n");
    }

    /**
     * One run of the MD app.
     *
     * @param millis    the app's time: its runs, back to back
     * @param migration the migration's report; null when the app never moved
     */
    private record MdRun(double millis, long launches, String digest, MigrationReport migration, List<MdStep> steps) {}

    /** Where one run of the MD app ran: wholly before its migration started, while it ran, or wholly after it ended. */
    private enum MdPhase {
        BEFORE,
        DURING,
        AFTER
    }

    /** One of the MD app's runs; an app never migrated has only runs BEFORE. */
    private record MdStep(MdPhase phase, double millis) {
        /** The median time of {@code steps}; NaN for none. */
        static double median(List<MdStep> steps) {
            return steps.isEmpty()
                    ? Double.NaN
                    : BenchFigures.median(
                            steps.stream().mapToDouble(MdStep::millis).toArray());
        }
    }

    /**
     * Runs the MD app, migrated to {@code target} by its own thread after {@code migrateAfter}
     * launches (0: never), then, if asked, checks each of its runs against the CPU reference.
     */
    private static MdRun mdRun(
            MigratableGpu gpu,
            LennardJonesWorkload workload,
            BenchSettings settings,
            long migrateAfter,
            MigrationTarget target,
            PrintStream out,
            boolean checkEachRun) {
        MigrateAfterLaunches trigger = new MigrateAfterLaunches(
                gpu,
                migrateAfter,
                target,
                migration -> Thread.ofPlatform().name("migration agent").start(migration));
        Transcript transcript = new Transcript(trigger);
        List<MdStep> steps = new ArrayList<>();
        // the runs to check once the app has ended
        List<LennardJonesWorkload.Simulation> simulations = new ArrayList<>();
        long start = System.nanoTime();
        for (int run = 0; run < settings.mdRuns(); run++) {
            boolean doneBefore = trigger.migration().isDone();
            long runStart = System.nanoTime();
            LennardJonesWorkload.Simulation simulation = workload.simulate(transcript, settings.mdScale(), run + 1);
            long runNanos = System.nanoTime() - runStart;
            if (checkEachRun) {
                simulations.add(simulation);
            }
            MdPhase phase = doneBefore
                    ? MdPhase.AFTER
                    : migrateAfter == 0 || trigger.launches() < migrateAfter ? MdPhase.BEFORE : MdPhase.DURING;
            steps.add(new MdStep(phase, runNanos / 1e6));
        }
        double millis = (System.nanoTime() - start) / 1e6;
        MigrationReport migration =
                migrateAfter == 0 ? null : trigger.migration().join();
        for (LennardJonesWorkload.Simulation simulation : simulations) {
            WorkloadResult result = workload.check(simulation);
            if (!result.passed()) {
                out.printf("  MD run FAILED its check: %s%n", result.errorSummary());
            }
        }
        return new MdRun(millis, transcript.launches(), transcript.digest(), migration, steps);
    }
}
