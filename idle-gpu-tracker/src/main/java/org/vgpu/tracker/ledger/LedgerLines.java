package org.vgpu.tracker.ledger;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.zip.CRC32C;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.CertificatePin;

/**
 * The ledger's line format. One record per line, words separated by one space, the last word a
 * CRC-32C of the rest so a line damaged on disk is told from a valid one:
 * <pre>
 *   assembly job=42 user=alice node=n1 vgpus=3 local=1 phase=released planned=MILLIS released=MILLIS
 *            lend=1/n2/43/3/10.1.0.2:7500/n2-d3-9f2c lend=2/n3/44/-/-/- crc=1a2b3c4d
 *   forget job=42 why=ended crc=...
 *   migration id=7 job=42 vgpu=1 node=n1 to=home phase=claiming grant=57 gpu=- worker=- started=MILLIS sent=- by=hook crc=...
 *   outcome id=7 job=42 vgpu=1 result=ok blocked=120 bytes=1048576 at=MILLIS crc=...
 *   migrations last=7 crc=...
 *   certificate worker=n2-holder-43 sha256=HEX crc=...
 * </pre>
 * {@code lend=VGPU/NODE/HOLDER/GPU/HOST:PORT/WORKER-ID[/FORMER-ID,...]}, {@code -} for what is not known yet (the
 * former ids: workers that served the lend before it moved from lender to lender); a lend
 * that moved home reads {@code lend=VGPU/JOB-NODE/GRANT-HOLDER/GPU/home/FORMER-WORKER-ID}. An
 * {@code assembly} line replaces the job's earlier one; {@code forget} ends it (and its migrations).
 * A {@code migration} line ({@code to=home}: a GPU of the job's node; {@code to=remote}: a worker on another
 * lender, {@code worker=HOST:PORT/WORKER-ID} once it announced itself) replaces the earlier one of the same id; {@code outcome} ends it and is
 * the vGPU's last move (the hook's cooldown). A {@code certificate} line records the SHA-256 fingerprint of a worker's
 * TLS certificate, which the worker proved when it announced itself and the job's tokens for it pin. Times are
 * milliseconds since the epoch. Tokens are never written: they are issued afresh when asked for.
 */
public final class LedgerLines {
    private static final String NONE = "-";
    private static final String HOME = "home";

    /** A parsed line: an assembly to keep, a job to forget, a migration's step or its outcome. */
    public sealed interface Entry {
        record Keep(Assembly assembly) implements Entry {}

        record Forget(long job, String why) implements Entry {
            public Forget {
                LedgerValues.atLeast("job", job, 1);
                LedgerValues.word("reason", why);
            }
        }

        record Step(Migration migration) implements Entry {}

        record Outcome(MigrationOutcome outcome) implements Entry {}

        record Certificate(String workerId, CertificatePin pin) implements Entry {
            public Certificate {
                LedgerValues.word("worker id", workerId);
                Objects.requireNonNull(pin, "pin");
            }
        }

        record LastMigrationId(long id) implements Entry {
            public LastMigrationId {
                LedgerValues.atLeast("last", id, 0);
            }
        }
    }

    private LedgerLines() {}

    public static String assembly(Assembly assembly) {
        StringBuilder line = new StringBuilder("assembly");
        line.append(" job=").append(assembly.job());
        line.append(" user=").append(word("user", assembly.user()));
        line.append(" node=").append(word("node", assembly.node()));
        line.append(" vgpus=").append(assembly.vgpus());
        line.append(" local=").append(assembly.localGpus());
        line.append(" phase=").append(assembly.phase().name().toLowerCase(Locale.ROOT));
        line.append(" planned=").append(assembly.planned().toEpochMilli());
        assembly.released().ifPresent(when -> line.append(" released=").append(when.toEpochMilli()));
        for (Lend lend : assembly.lends()) {
            line.append(" lend=")
                    .append(lend.vgpu())
                    .append('/')
                    .append(word("node", lend.node()))
                    .append('/')
                    .append(
                            lend.holder().isPresent()
                                    ? Long.toString(lend.holder().getAsLong())
                                    : NONE)
                    .append('/')
                    .append(lend.gpu().isPresent() ? Integer.toString(lend.gpu().getAsInt()) : NONE)
                    .append('/')
                    .append(
                            lend.home()
                                    ? HOME
                                    : lend.worker().map(Endpoint::toString).orElse(NONE))
                    .append('/')
                    .append(lend.workerId().map(id -> word("worker id", id)).orElse(NONE));
            if (!lend.formerWorkerIds().isEmpty()) {
                line.append('/')
                        .append(String.join(
                                ",",
                                lend.formerWorkerIds().stream()
                                        .map(id -> word("worker id", id))
                                        .toList()));
            }
        }
        return sealed(line.toString());
    }

    public static String forget(long job, String why) {
        return sealed("forget job=" + job + " why=" + word("reason", why));
    }

    public static String migration(Migration migration) {
        return sealed("migration id=" + migration.id() + " job=" + migration.job() + " vgpu=" + migration.vgpu()
                + " node=" + word("node", migration.node()) + " to=" + (migration.remote() ? "remote" : "home")
                + " phase=" + migration.phase().name().toLowerCase(Locale.ROOT)
                + " grant="
                + (migration.grant().isPresent()
                        ? Long.toString(migration.grant().getAsLong())
                        : NONE)
                + " gpu="
                + (migration.gpu().isPresent()
                        ? Integer.toString(migration.gpu().getAsInt())
                        : NONE)
                + " worker="
                + migration
                        .worker()
                        .map(worker -> worker.endpoint() + "/" + word("worker id", worker.id()))
                        .orElse(NONE)
                + " started=" + migration.started().toEpochMilli()
                + " sent="
                + migration
                        .sent()
                        .map(when -> Long.toString(when.toEpochMilli()))
                        .orElse(NONE)
                + " by=" + word("migration's origin", migration.by()));
    }

    /** The highest migration id handed out, so ids stay unique across compactions. */
    public static String lastMigrationId(long id) {
        return sealed("migrations last=" + id);
    }

    public static String certificate(String workerId, CertificatePin pin) {
        return sealed("certificate worker=" + word("worker id", workerId) + " sha256="
                + HexFormat.of().formatHex(pin.digest()));
    }

    public static String outcome(MigrationOutcome outcome) {
        return sealed("outcome id=" + outcome.id() + " job=" + outcome.job() + " vgpu=" + outcome.vgpu() + " result="
                + outcome.result().word() + " blocked=" + outcome.blockedMs() + " bytes=" + outcome.bytes() + " at="
                + outcome.at().toEpochMilli());
    }

    /**
     * @throws IllegalArgumentException saying what is wrong with the line
     */
    public static Entry parse(String line) {
        int lastSpace = line.lastIndexOf(' ');
        if (lastSpace < 0 || !line.startsWith("crc=", lastSpace + 1)) {
            throw new IllegalArgumentException("no crc= at the end of the line");
        }
        String body = line.substring(0, lastSpace);
        if (!line.substring(lastSpace + 1).equals(crcField(body))) {
            throw new IllegalArgumentException("its CRC does not match its content (damaged on disk?)");
        }
        String[] words = body.split(" ");
        if (words.length == 0 || words[0].isEmpty()) {
            throw new IllegalArgumentException("no record name at the start of the line");
        }
        Map<String, String> fields = new LinkedHashMap<>();
        List<String> lends = new ArrayList<>();
        for (int i = 1; i < words.length; i++) {
            int equals = words[i].indexOf('=');
            if (equals < 1) {
                throw new IllegalArgumentException("'" + words[i] + "' is not key=value");
            }
            String key = words[i].substring(0, equals);
            String value = words[i].substring(equals + 1);
            if (key.equals("lend")) {
                lends.add(value);
            } else if (fields.put(key, value) != null) {
                throw new IllegalArgumentException("'" + key + "' appears twice");
            }
        }
        return switch (words[0]) {
            case "assembly" -> new Entry.Keep(assembly(fields, lends));
            case "forget" -> new Entry.Forget(number(fields, "job", 1), require(fields, "why"));
            case "migration" -> new Entry.Step(migration(fields));
            case "outcome" -> new Entry.Outcome(outcome(fields));
            case "migrations" -> new Entry.LastMigrationId(number(fields, "last", 0));
            case "certificate" -> new Entry.Certificate(require(fields, "worker"), pin(require(fields, "sha256")));
            default ->
                throw new IllegalArgumentException("unknown record " + LedgerValues.shown(words[0])
                        + "; expected assembly, forget, migration, outcome, migrations or certificate");
        };
    }

    private static Assembly assembly(Map<String, String> fields, List<String> lendTexts) {
        List<Lend> lends = new ArrayList<>();
        for (String text : lendTexts) {
            String[] parts = text.split("/", 7);
            if (parts.length < 6) {
                throw new IllegalArgumentException("lend " + LedgerValues.shown(text)
                        + " is not VGPU/NODE/HOLDER/GPU/HOST:PORT/WORKER-ID[/FORMER-ID,...]");
            }
            List<String> formers = parts.length == 7 ? List.of(parts[6].split(",", -1)) : List.of();
            boolean home = parts[4].equals(HOME);
            boolean hasWorker = !home && !parts[4].equals(NONE);
            try {
                lends.add(new Lend(
                        Integer.parseInt(parts[0]),
                        parts[1],
                        parts[2].equals(NONE) ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(parts[2])),
                        parts[3].equals(NONE) ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(parts[3])),
                        hasWorker ? Optional.of(endpoint("worker", parts[4])) : Optional.empty(),
                        parts[5].equals(NONE) ? Optional.empty() : Optional.of(parts[5]),
                        home,
                        formers));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "lend " + LedgerValues.shown(text) + " has a VGPU, HOLDER or GPU that is not a number", e);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("lend " + LedgerValues.shown(text) + ": " + e.getMessage(), e);
            }
        }
        Assembly.Phase phase = switch (require(fields, "phase")) {
            case "securing" -> Assembly.Phase.SECURING;
            case "released" -> Assembly.Phase.RELEASED;
            default ->
                throw new IllegalArgumentException("phase '" + fields.get("phase") + "' is not securing or released");
        };
        Optional<Instant> released =
                fields.containsKey("released") ? Optional.of(time(fields, "released")) : Optional.empty();
        return new Assembly(
                number(fields, "job", 1),
                require(fields, "user"),
                require(fields, "node"),
                integer(fields, "vgpus", 1),
                integer(fields, "local", 0),
                phase,
                time(fields, "planned"),
                released,
                lends);
    }

    private static Migration migration(Map<String, String> fields) {
        Migration.Phase phase = switch (require(fields, "phase")) {
            case "claiming" -> Migration.Phase.CLAIMING;
            case "sent" -> Migration.Phase.SENT;
            default ->
                throw new IllegalArgumentException("phase '" + fields.get("phase") + "' is not claiming or sent");
        };
        boolean remote = switch (require(fields, "to")) {
            case "home" -> false;
            case "remote" -> true;
            default -> throw new IllegalArgumentException("to '" + fields.get("to") + "' is not home or remote");
        };
        Optional<Migration.Worker> worker = Optional.empty();
        String workerText = require(fields, "worker");
        if (!workerText.equals(NONE)) {
            int slash = workerText.lastIndexOf('/');
            if (slash < 0) {
                throw new IllegalArgumentException(
                        "worker: expected HOST:PORT/WORKER-ID, found " + LedgerValues.shown(workerText));
            }
            worker = Optional.of(new Migration.Worker(
                    endpoint("worker", workerText.substring(0, slash)), workerText.substring(slash + 1)));
        }
        return new Migration(
                number(fields, "id", 1),
                number(fields, "job", 1),
                integer(fields, "vgpu", 0),
                require(fields, "node"),
                remote,
                phase,
                require(fields, "grant").equals(NONE)
                        ? OptionalLong.empty()
                        : OptionalLong.of(number(fields, "grant", 1)),
                require(fields, "gpu").equals(NONE) ? OptionalInt.empty() : OptionalInt.of(integer(fields, "gpu", 0)),
                worker,
                time(fields, "started"),
                require(fields, "sent").equals(NONE) ? Optional.empty() : Optional.of(time(fields, "sent")),
                require(fields, "by"));
    }

    private static MigrationOutcome outcome(Map<String, String> fields) {
        return new MigrationOutcome(
                number(fields, "id", 1),
                number(fields, "job", 1),
                integer(fields, "vgpu", 0),
                MigrationOutcome.Result.of(require(fields, "result")),
                number(fields, "blocked", 0),
                number(fields, "bytes", 0),
                time(fields, "at"));
    }

    private static String require(Map<String, String> fields, String key) {
        String value = fields.get(key);
        if (value == null) {
            throw new IllegalArgumentException("'" + key + "' is missing");
        }
        return value;
    }

    private static long number(Map<String, String> fields, String key, long min) {
        return number(fields, key, min, Long.MAX_VALUE);
    }

    private static int integer(Map<String, String> fields, String key, int min) {
        return (int) number(fields, key, min, Integer.MAX_VALUE);
    }

    private static long number(Map<String, String> fields, String key, long min, long max) {
        String text = require(fields, key);
        long value;
        try {
            value = Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "'" + key + "=" + LedgerValues.shown(text).replace("'", "")
                            + "' is not a number: expected a number in " + min + ".." + max);
        }
        if (value < min || value > max) {
            throw new IllegalArgumentException(key + ": expected a number in " + min + ".." + max + ", found " + value);
        }
        return value;
    }

    private static Instant time(Map<String, String> fields, String key) {
        return Instant.ofEpochMilli(number(fields, key, 0));
    }

    private static CertificatePin pin(String hex) {
        try {
            return CertificatePin.ofDigest(HexFormat.of().parseHex(hex));
        } catch (IllegalArgumentException | VgpuFailure e) {
            throw new IllegalArgumentException(
                    "sha256: expected " + CertificatePin.BYTES * 2 + " hex digits, found " + LedgerValues.shown(hex),
                    e);
        }
    }

    private static Endpoint endpoint(String what, String text) {
        try {
            return Endpoint.parse(text);
        } catch (VgpuFailure e) {
            throw new IllegalArgumentException(
                    what + ": expected HOST:PORT with a port in 0..65535, found " + LedgerValues.shown(text), e);
        }
    }

    private static String word(String what, String value) {
        return LedgerValues.word(what, value);
    }

    /** {@code body} with its CRC field, as a ledger line is written (and as tests write one). */
    static String sealed(String body) {
        return body + " " + crcField(body);
    }

    private static String crcField(String body) {
        CRC32C crc = new CRC32C();
        crc.update(body.getBytes(StandardCharsets.US_ASCII));
        return "crc=" + HexFormat.of().toHexDigits((int) crc.getValue());
    }
}
