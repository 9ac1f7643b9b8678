package org.vgpu.tracker.report;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.OptionalLong;

import org.vgpu.tracker.StatusReport;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Lend;

/**
 * The facts {@code vgpu report} shows, one document for its three outputs: the tracker sends it as
 * JSON ({@link ReportJson}), and the table, JSON and CSV are written from it alone, so they carry the
 * same facts. Field names are the JSON's (snake_case); a fact not known yet (a lender's GPU before its
 * holder runs, traffic before the job's agent reported, the end of a running migration) is null. Every
 * time is an ISO-8601 instant in UTC with milliseconds ({@link #time}: {@code 2026-11-25T03:10:00.000Z}),
 * in all three outputs.
 *
 * @param schemaVersion {@link #SCHEMA_VERSION}: raised when a field changes meaning or goes away
 *                      (adding one does not raise it)
 */
public record Report(
        int schemaVersion,
        Instant generatedAt,
        List<AssemblyRow> assemblies,
        List<BorrowedRow> borrowed,
        List<MigrationRow> migrations,
        List<HeldRow> heldJobs,
        List<IdleRow> idleGpus,
        List<EndedRow> ended) {
    public static final int SCHEMA_VERSION = 1;

    /**
     * The one form of a time in the report: ISO-8601, UTC, always three fraction digits, so every time
     * has the same length and sorts as text (Instant's own form drops zero fractions and shows nanoseconds).
     */
    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    /** {@code instant} as the report writes it, e.g. {@code 2026-11-25T03:10:00.000Z}. */
    public static String time(Instant instant) {
        return TIME.format(instant);
    }

    public Report {
        Objects.requireNonNull(generatedAt, "generated_at");
        assemblies = List.copyOf(Objects.requireNonNull(assemblies, "assemblies"));
        borrowed = List.copyOf(Objects.requireNonNull(borrowed, "borrowed"));
        migrations = List.copyOf(Objects.requireNonNull(migrations, "migrations"));
        heldJobs = List.copyOf(Objects.requireNonNull(heldJobs, "held_jobs"));
        idleGpus = List.copyOf(Objects.requireNonNull(idleGpus, "idle_gpus"));
        ended = List.copyOf(Objects.requireNonNull(ended, "ended"));
    }

    /**
     * A live assembly: {@code local} GPUs of its node (indices {@code localGpus} once Slurm shows
     * them; a borrowed vGPU that moved home counts here, with the GPU its grant holder keeps) and
     * {@code borrowed} GPUs of other nodes make its {@code vgpus}; {@code released} is null while the
     * tracker secures it.
     */
    public record AssemblyRow(
            long job,
            String user,
            String node,
            int vgpus,
            int local,
            int borrowed,
            List<Integer> localGpus,
            String phase,
            Instant planned,
            Instant released) {
        public AssemblyRow {
            localGpus = List.copyOf(localGpus);
        }
    }

    /**
     * One GPU borrowed now: job {@code job} of {@code user} runs on {@code node} (its own GPUs there:
     * {@code localGpus}) and uses GPU {@code lenderGpu} of {@code lenderNode} as its vGPU {@code vgpu},
     * kept by holder job {@code holder} (lost: Slurm shows the holder ended) and served by {@code worker},
     * since {@code since}; {@code forwardedCalls} and {@code forwardedBytes} as the job's agent last said;
     * {@code lostReason}: why the vGPU dies with its cancelled holder (no evacuation could move it), else null.
     */
    public record BorrowedRow(
            long job,
            String user,
            String node,
            List<Integer> localGpus,
            int vgpu,
            String lenderNode,
            Integer lenderGpu,
            Long holder,
            boolean holderLost,
            String worker,
            Instant since,
            Long forwardedCalls,
            Long forwardedBytes,
            String lostReason) {
        public BorrowedRow {
            localGpus = List.copyOf(localGpus);
        }
    }

    /** A migration: vGPU {@code vgpu} of {@code job} moved {@code from} -> {@code to} (NODE:GPU each). */
    public record MigrationRow(
            long id,
            long job,
            int vgpu,
            String from,
            String to,
            String reason,
            Instant startedAt,
            Instant finishedAt,
            Long blockedMs,
            Long bytes,
            String outcome) {}

    /** A vgpu job Slurm holds until the tracker can assemble it, and why it waits. */
    public record HeldRow(long job, String user, int vgpus, String reason) {}

    /** The {@code count} GPUs of {@code node} that no job holds, by index. */
    public record IdleRow(String node, int count, List<Integer> gpus) {
        public IdleRow {
            gpus = List.copyOf(gpus);
        }
    }

    /** An assembly that ended {@code at}: why (done, gone, ended, aborted) and, for an aborted one, what went wrong. */
    public record EndedRow(
            long job, String user, String node, int vgpus, int borrowed, String why, Instant at, String reason) {}

    /** The document of what the tracker knows. */
    public static Report of(StatusReport status) {
        List<AssemblyRow> assemblies = new ArrayList<>();
        List<BorrowedRow> borrowed = new ArrayList<>();
        for (StatusReport.Live live : status.assemblies()) {
            Assembly assembly = live.assembly();
            List<Lend> remote = assembly.borrowedLends();
            // A vGPU that moved home runs on a GPU of the job's node: local now, on the grant holder's GPU.
            List<Integer> localGpus = new ArrayList<>(live.localGpus());
            assembly.lends().stream()
                    .filter(Lend::home)
                    .forEach(lend -> lend.gpu().ifPresent(localGpus::add));
            localGpus.sort(null);
            assemblies.add(new AssemblyRow(
                    assembly.job(),
                    assembly.user(),
                    assembly.node(),
                    assembly.vgpus(),
                    assembly.vgpus() - remote.size(),
                    remote.size(),
                    localGpus,
                    assembly.phase().name().toLowerCase(Locale.ROOT),
                    assembly.planned(),
                    assembly.released().orElse(null)));
            for (Lend lend : remote) {
                StatusReport.Forwarded forwarded = live.forwarded().get(lend.vgpu());
                borrowed.add(new BorrowedRow(
                        assembly.job(),
                        assembly.user(),
                        assembly.node(),
                        localGpus,
                        lend.vgpu(),
                        lend.node(),
                        boxed(lend.gpu()),
                        boxed(lend.holder()),
                        lend.holder().isPresent()
                                && live.lostHolders().contains(lend.holder().getAsLong()),
                        lend.worker().map(Object::toString).orElse(null),
                        assembly.released().orElse(assembly.planned()),
                        forwarded == null ? null : forwarded.calls(),
                        forwarded == null ? null : forwarded.bytes(),
                        live.lostVgpus().get(lend.vgpu())));
            }
        }
        return new Report(
                SCHEMA_VERSION,
                status.at(),
                assemblies,
                borrowed,
                status.migrations().stream()
                        .map(migration -> new MigrationRow(
                                migration.id(),
                                migration.job(),
                                migration.vgpu(),
                                migration.from(),
                                migration.to(),
                                migration.reason(),
                                migration.startedAt(),
                                migration.finishedAt().orElse(null),
                                boxed(migration.blockedMillis()),
                                boxed(migration.bytes()),
                                migration.outcome()))
                        .toList(),
                status.waiting().stream()
                        .map(job -> new HeldRow(job.job(), job.user(), job.vgpus(), job.reason()))
                        .toList(),
                status.idleGpus().stream()
                        .map(node -> new IdleRow(node.node(), node.gpus().size(), node.gpus()))
                        .toList(),
                status.ended().stream()
                        .map(ended -> new EndedRow(
                                ended.job(),
                                ended.user(),
                                ended.node(),
                                ended.vgpus(),
                                ended.borrowed(),
                                ended.why(),
                                ended.at(),
                                ended.reason().orElse(null)))
                        .toList());
    }

    private static Integer boxed(OptionalInt value) {
        return value.isPresent() ? value.getAsInt() : null;
    }

    private static Long boxed(OptionalLong value) {
        return value.isPresent() ? value.getAsLong() : null;
    }
}
