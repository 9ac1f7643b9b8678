package org.vgpu.tracker.report;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * The {@link Report} as aligned text tables for a terminal, one per section, each under a title that
 * counts its rows. An unknown fact (JSON null) shows as {@code -}; times are the JSON's ISO-8601 UTC.
 */
public final class ReportTable {
    private static final String UNKNOWN = "-";

    private ReportTable() {}

    public static String write(Report report) {
        StringBuilder out = new StringBuilder();
        out.append("vgpu report at ").append(Report.time(report.generatedAt())).append('\n');

        out.append('\n')
                .append("Assemblies: ")
                .append(report.assemblies().size())
                .append(", borrowed GPUs: ")
                .append(report.borrowed().size())
                .append('\n');
        List<List<String>> rows = new ArrayList<>();
        rows.add(List.of("JOB", "USER", "NODE", "VGPUS", "LOCAL", "BORROWED (vGPU=NODE:GPU holder)", "PHASE", "SINCE"));
        for (Report.AssemblyRow assembly : report.assemblies()) {
            String borrowed = report.borrowed().stream()
                    .filter(lend -> lend.job() == assembly.job())
                    .map(ReportTable::borrowedCell)
                    .collect(Collectors.joining(" "));
            rows.add(List.of(
                    Long.toString(assembly.job()),
                    assembly.user(),
                    assembly.node(),
                    Integer.toString(assembly.vgpus()),
                    Integer.toString(assembly.local()),
                    borrowed.isEmpty() ? UNKNOWN : borrowed,
                    assembly.phase(),
                    text(assembly.released() != null ? assembly.released() : assembly.planned())));
        }
        aligned(rows, out);

        section(out, "Borrowed GPUs now", report.borrowed().size());
        rows = new ArrayList<>();
        rows.add(List.of(
                "JOB", "USER", "NODE", "LOCAL GPUS", "VGPU", "LENDER (NODE:GPU)", "HOLDER", "SINCE", "CALLS", "BYTES"));
        for (Report.BorrowedRow lend : report.borrowed()) {
            rows.add(List.of(
                    Long.toString(lend.job()),
                    lend.user(),
                    lend.node(),
                    indices(lend.localGpus(), UNKNOWN),
                    Integer.toString(lend.vgpu()),
                    lend.lenderNode() + ":" + text(lend.lenderGpu()),
                    text(lend.holder()) + lost(lend),
                    text(lend.since()),
                    text(lend.forwardedCalls()),
                    text(lend.forwardedBytes())));
        }
        aligned(rows, out);

        section(out, "Migrations", report.migrations().size());
        rows = new ArrayList<>();
        rows.add(List.of(
                "STARTED", "JOB", "VGPU", "FROM -> TO", "REASON", "BLOCKED MS", "BYTES", "OUTCOME", "FINISHED"));
        for (Report.MigrationRow migration : report.migrations()) {
            rows.add(List.of(
                    text(migration.startedAt()),
                    Long.toString(migration.job()),
                    Integer.toString(migration.vgpu()),
                    migration.from() + " -> " + migration.to(),
                    migration.reason(),
                    text(migration.blockedMs()),
                    text(migration.bytes()),
                    migration.outcome(),
                    text(migration.finishedAt())));
        }
        aligned(rows, out);

        section(out, "Held vgpu jobs", report.heldJobs().size());
        rows = new ArrayList<>();
        rows.add(List.of("JOB", "USER", "VGPUS", "REASON"));
        for (Report.HeldRow job : report.heldJobs()) {
            rows.add(List.of(Long.toString(job.job()), job.user(), Integer.toString(job.vgpus()), job.reason()));
        }
        aligned(rows, out);

        section(
                out,
                "Idle GPUs",
                report.idleGpus().stream().mapToInt(Report.IdleRow::count).sum());
        rows = new ArrayList<>();
        rows.add(List.of("NODE", "IDLE", "GPUS"));
        for (Report.IdleRow node : report.idleGpus()) {
            rows.add(List.of(node.node(), Integer.toString(node.count()), indices(node.gpus(), "none")));
        }
        aligned(rows, out);

        section(out, "Recently ended assemblies", report.ended().size());
        rows = new ArrayList<>();
        rows.add(List.of("JOB", "USER", "NODE", "VGPUS", "BORROWED", "WHY", "AT"));
        for (Report.EndedRow ended : report.ended()) {
            rows.add(List.of(
                    Long.toString(ended.job()),
                    ended.user(),
                    ended.node(),
                    Integer.toString(ended.vgpus()),
                    Integer.toString(ended.borrowed()),
                    ended.why() + (ended.reason() == null ? "" : ": " + ended.reason()),
                    text(ended.at())));
        }
        aligned(rows, out);
        return out.toString();
    }

    private static String borrowedCell(Report.BorrowedRow lend) {
        String holder = lend.holder() == null ? "not submitted" : Long.toString(lend.holder());
        return lend.vgpu() + "=" + lend.lenderNode() + ":" + (lend.lenderGpu() == null ? "?" : lend.lenderGpu())
                + "(holder " + holder + lost(lend) + ")";
    }

    /** " LOST" when Slurm shows the holder ended, with why when the vGPU dies with a cancelled holder. */
    private static String lost(Report.BorrowedRow lend) {
        if (lend.lostReason() != null) {
            return " LOST: " + lend.lostReason();
        }
        return lend.holderLost() ? " LOST" : "";
    }

    private static void section(StringBuilder out, String title, int count) {
        out.append('\n').append(title).append(": ").append(count).append('\n');
    }

    private static String indices(List<Integer> gpus, String whenEmpty) {
        return gpus.isEmpty() ? whenEmpty : gpus.stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    private static String text(Object value) {
        return value == null
                ? UNKNOWN
                : value instanceof Instant instant ? Report.time(instant) : Objects.toString(value);
    }

    private static void aligned(List<List<String>> rows, StringBuilder out) {
        int columns = rows.getFirst().size();
        int[] widths = new int[columns];
        for (List<String> row : rows) {
            for (int i = 0; i < columns; i++) {
                widths[i] = Math.max(widths[i], row.get(i).length());
            }
        }
        for (List<String> row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < columns; i++) {
                line.append(i == columns - 1 ? row.get(i) : String.format("%-" + widths[i] + "s  ", row.get(i)));
            }
            out.append(line.toString().stripTrailing()).append('\n');
        }
    }
}
