package org.vgpu.tracker.ledger;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.IoReasons;
import org.vgpu.common.security.CertificatePin;

/**
 * The tracker's persistent record of every live assembly (its lends, holder jobs and workers), a
 * journal file of {@link LedgerLines} records. Every change is appended and forced to disk before
 * the tracker acts on it, so after a crash the ledger knows at least every lend Slurm might hold;
 * reconciling with Slurm on start fills in the rest. Opening replays the journal and rewrites it
 * compacted (write beside, fsync, rename); the journal is compacted again when it has grown well
 * beyond what is live.
 *
 * <p>A last line without its newline is a write cut short by a crash and is dropped with a
 * warning (nothing was acted on for it). Any other unreadable line stops the tracker: starting
 * without a lend record could give a GPU twice.
 *
 * <p>Not thread-safe: the tracker changes it from one thread.
 */
public final class Ledger implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Ledger.class);
    private static final int COMPACT_AFTER_LINES = 4096;

    private final Path file;
    private final Map<Long, Assembly> live = new LinkedHashMap<>();
    /** Migrations under way by id. */
    private final Map<Long, Migration> migrations = new LinkedHashMap<>();
    /** The last outcome of each vGPU of a live assembly, by job, then vGPU. */
    private final Map<Long, Map<Integer, MigrationOutcome>> outcomes = new LinkedHashMap<>();

    /** The TLS certificates of workers, by worker id, that their proofs pinned. */
    private final Map<String, CertificatePin> certificates = new LinkedHashMap<>();

    private long lastMigrationId;
    private FileChannel journal;
    private int linesSinceCompaction;

    private Ledger(Path file) {
        this.file = file;
    }

    /**
     * Opens the ledger at {@code file}, creating it (mode 600) and its directory when missing.
     *
     * @throws LedgerException naming the file and line when it cannot be read, and the file when it cannot be written
     */
    public static Ledger open(Path file) {
        Ledger ledger = new Ledger(file.toAbsolutePath());
        ledger.replay();
        ledger.compact();
        return ledger;
    }

    public Path file() {
        return file;
    }

    /** The live assemblies by job, in the order they were first recorded. */
    public Collection<Assembly> assemblies() {
        return List.copyOf(live.values());
    }

    public Optional<Assembly> assembly(long job) {
        return Optional.ofNullable(live.get(job));
    }

    /** Records a new or changed assembly, durably. */
    public void record(Assembly assembly) {
        String line = LedgerLines.assembly(assembly);
        // Live first: a compaction triggered by the append then writes the new state too.
        live.put(assembly.job(), assembly);
        append(line);
    }

    /**
     * Ends a job's assembly and its migrations, durably; {@code why} is one word ({@code done}, {@code gone},
     * {@code aborted}).
     */
    public void forget(long job, String why) {
        if (!live.containsKey(job)) {
            return;
        }
        String line = LedgerLines.forget(job, why);
        forgetLive(job);
        append(line);
    }

    /** Records the TLS certificate worker {@code workerId} proved it has, durably. */
    public void recordCertificate(String workerId, CertificatePin pin) {
        String line = LedgerLines.certificate(workerId, pin);
        certificates.put(workerId, pin);
        append(line);
    }

    /** The certificate worker {@code workerId} proved, which the job's tokens for it pin; empty: a worker without TLS. */
    public Optional<CertificatePin> certificate(String workerId) {
        return Optional.ofNullable(certificates.get(workerId));
    }

    /** The migrations under way, oldest first. */
    public Collection<Migration> migrations() {
        return List.copyOf(migrations.values());
    }

    /** The id for the next migration: above every id this ledger has seen. */
    public long nextMigrationId() {
        return lastMigrationId + 1;
    }

    /** Records a migration's intent or its next step, durably. */
    public void record(Migration migration) {
        if (!live.containsKey(migration.job())) {
            throw new IllegalStateException(
                    "migration " + migration.id() + " of job " + migration.job() + " has no live assembly");
        }
        String line = LedgerLines.migration(migration);
        migrations.put(migration.id(), migration);
        lastMigrationId = Math.max(lastMigrationId, migration.id());
        append(line);
    }

    /** Ends a migration with its outcome, durably; it becomes the vGPU's last outcome. */
    public void finish(MigrationOutcome outcome) {
        String line = LedgerLines.outcome(outcome);
        keep(outcome);
        append(line);
    }

    /** The last migration outcome of a job's vGPU, while the job's assembly lives. */
    public Optional<MigrationOutcome> lastOutcome(long job, int vgpu) {
        return Optional.ofNullable(outcomes.getOrDefault(job, Map.of()).get(vgpu));
    }

    private void keep(MigrationOutcome outcome) {
        migrations.remove(outcome.id());
        lastMigrationId = Math.max(lastMigrationId, outcome.id());
        if (live.containsKey(outcome.job())) {
            outcomes.computeIfAbsent(outcome.job(), job -> new LinkedHashMap<>())
                    .put(outcome.vgpu(), outcome);
        }
    }

    private void forgetLive(long job) {
        live.remove(job);
        migrations.values().removeIf(migration -> migration.job() == job);
        outcomes.remove(job);
    }

    @Override
    public void close() {
        if (journal != null) {
            try {
                journal.close();
            } catch (IOException e) {
                LOG.warn("closing ledger {}: {}", file, e.toString());
            }
        }
    }

    private void replay() {
        if (!Files.exists(file)) {
            return;
        }
        String text;
        try {
            // One char per byte, so a byte that is not ASCII is reported at its line instead of failing the read.
            text = new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            throw new LedgerException(
                    LedgerException.Code.UNREADABLE, "cannot read the ledger " + file + ": " + IoReasons.of(e), e);
        }
        String[] lines = text.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            boolean last = i == lines.length - 1;
            if (last && lines[i].isEmpty()) {
                break;
            }
            if (last) {
                LOG.warn(
                        "ledger {}: line {} has no newline (a write cut short by a crash); dropped: {}",
                        file,
                        i + 1,
                        lines[i].length() > 120 ? lines[i].substring(0, 120) + "..." : lines[i]);
                break;
            }
            int column = firstNonText(lines[i]);
            if (column >= 0) {
                throw damaged(
                        i + 1,
                        "expected ASCII text, found the byte 0x%02x at column %d"
                                .formatted((int) lines[i].charAt(column), column + 1));
            }
            LedgerLines.Entry entry;
            try {
                entry = LedgerLines.parse(lines[i]);
            } catch (IllegalArgumentException e) {
                throw damaged(i + 1, e.getMessage());
            }
            switch (entry) {
                case LedgerLines.Entry.Keep keep -> live.put(keep.assembly().job(), keep.assembly());
                case LedgerLines.Entry.Forget forget -> forgetLive(forget.job());
                case LedgerLines.Entry.Step step -> {
                    migrations.put(step.migration().id(), step.migration());
                    lastMigrationId = Math.max(lastMigrationId, step.migration().id());
                }
                case LedgerLines.Entry.Outcome outcome -> keep(outcome.outcome());
                case LedgerLines.Entry.LastMigrationId seen -> lastMigrationId = Math.max(lastMigrationId, seen.id());
                case LedgerLines.Entry.Certificate certificate ->
                    certificates.put(certificate.workerId(), certificate.pin());
            }
        }
    }

    /**
     * A line that is not a record: FILE:LINE, what was expected and found. Thrown before anything is written, so
     * the file stays as it was for the admin to repair.
     */
    private LedgerException damaged(int line, String reason) {
        return new LedgerException(
                LedgerException.Code.DAMAGED,
                file + ":" + line + ": unreadable ledger record: " + reason
                        + "; the tracker will not start without knowing every lend. Repair the line, or move the file"
                        + " aside to start empty (holder jobs the tracker then does not know are cancelled)");
    }

    /** The index of the first character that is not printable ASCII, or -1. */
    private static int firstNonText(String line) {
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c < ' ' || c > '~') {
                return i;
            }
        }
        return -1;
    }

    private void compact() {
        close();
        Path directory = file.getParent();
        Path fresh = directory.resolve(file.getFileName() + ".new");
        try {
            Files.createDirectories(directory);
            StringBuilder text = new StringBuilder();
            for (Assembly assembly : live.values()) {
                text.append(LedgerLines.assembly(assembly)).append('\n');
            }
            // Ids are never reused, even after every job that had one ended: an agent may still hold an old one.
            if (lastMigrationId > 0) {
                text.append(LedgerLines.lastMigrationId(lastMigrationId)).append('\n');
            }
            outcomes.values().stream()
                    .flatMap(byVgpu -> byVgpu.values().stream())
                    .forEach(
                            outcome -> text.append(LedgerLines.outcome(outcome)).append('\n'));
            for (Migration migration : migrations.values()) {
                text.append(LedgerLines.migration(migration)).append('\n');
            }
            // only the certificates of workers that serve, or will serve, a live assembly
            certificates.keySet().retainAll(servingWorkerIds());
            certificates.forEach((workerId, pin) ->
                    text.append(LedgerLines.certificate(workerId, pin)).append('\n'));
            Files.deleteIfExists(fresh);
            try (FileChannel out = FileChannel.open(
                    fresh,
                    Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
                writeFully(out, text.toString());
                out.force(true);
            }
            try {
                Files.move(fresh, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(fresh, file, StandardCopyOption.REPLACE_EXISTING);
            }
            forceDirectory(directory);
            journal = FileChannel.open(file, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
            linesSinceCompaction = 0;
        } catch (IOException e) {
            throw new LedgerException(
                    LedgerException.Code.UNWRITABLE, "cannot write the ledger " + file + ": " + IoReasons.of(e), e);
        }
    }

    private Set<String> servingWorkerIds() {
        Set<String> ids = new HashSet<>();
        live.values()
                .forEach(assembly ->
                        assembly.lends().forEach(lend -> lend.workerId().ifPresent(ids::add)));
        migrations.values().forEach(migration -> migration.worker().ifPresent(worker -> ids.add(worker.id())));
        return ids;
    }

    private void append(String line) {
        try {
            writeFully(journal, line + "\n");
            journal.force(false);
        } catch (IOException e) {
            throw new LedgerException(
                    LedgerException.Code.UNWRITABLE, "cannot append to the ledger " + file + ": " + IoReasons.of(e), e);
        }
        if (++linesSinceCompaction > COMPACT_AFTER_LINES + 4 * live.size()) {
            compact();
        }
    }

    private static void writeFully(FileChannel channel, String text) throws IOException {
        ByteBuffer bytes = ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII));
        while (bytes.hasRemaining()) {
            channel.write(bytes);
        }
    }

    /** Makes the rename itself durable; some file systems refuse to open a directory, which then has to do. */
    private static void forceDirectory(Path directory) {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException e) {
            LOG.debug("cannot fsync directory {}: {}", directory, e.toString());
        }
    }
}
