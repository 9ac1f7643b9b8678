package org.vgpu.tracker.ledger;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;

/**
 * The ledger's line format. One record per line, words separated by one space, the last word a
 * CRC-32C of the rest so a line damaged on disk is told from a valid one:
 * <pre>
 *   assembly job=42 user=alice node=n1 vgpus=3 local=1 phase=released planned=MILLIS released=MILLIS
 *            lend=1/n2/43/3/10.1.0.2:7500/n2-d3-9f2c lend=2/n3/44/-/-/- crc=1a2b3c4d
 *   forget job=42 why=ended crc=...
 * </pre>
 * {@code lend=VGPU/NODE/HOLDER/GPU/HOST:PORT/WORKER-ID}, {@code -} for what is not known yet. An
 * {@code assembly} line replaces the job's earlier one; {@code forget} ends it. Times are
 * milliseconds since the epoch. Tokens are never written: they are issued afresh when asked for.
 */
public final class LedgerLines {
    /** Node, user and reason words: what Slurm allows in names, and nothing that could split a field. */
    private static final Pattern WORD = Pattern.compile("[A-Za-z0-9._@+-]{1,128}");

    private static final String NONE = "-";

    /** A parsed line: an assembly to keep, or a job to forget. */
    public sealed interface Entry {
        record Keep(Assembly assembly) implements Entry {}

        record Forget(long job, String why) implements Entry {}
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
                    .append(lend.worker().map(Endpoint::toString).orElse(NONE))
                    .append('/')
                    .append(lend.workerId().map(id -> word("worker id", id)).orElse(NONE));
        }
        return sealed(line.toString());
    }

    public static String forget(long job, String why) {
        return sealed("forget job=" + job + " why=" + word("reason", why));
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
            case "forget" -> new Entry.Forget(number(fields, "job"), require(fields, "why"));
            default -> throw new IllegalArgumentException("unknown record '" + words[0] + "'");
        };
    }

    private static Assembly assembly(Map<String, String> fields, List<String> lendTexts) {
        List<Lend> lends = new ArrayList<>();
        for (String text : lendTexts) {
            String[] parts = text.split("/", 6);
            if (parts.length != 6) {
                throw new IllegalArgumentException(
                        "lend '" + text + "' is not VGPU/NODE/HOLDER/GPU/HOST:PORT/WORKER-ID");
            }
            boolean hasWorker = !parts[4].equals(NONE);
            try {
                lends.add(new Lend(
                        Integer.parseInt(parts[0]),
                        parts[1],
                        parts[2].equals(NONE) ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(parts[2])),
                        parts[3].equals(NONE) ? OptionalInt.empty() : OptionalInt.of(Integer.parseInt(parts[3])),
                        hasWorker ? Optional.of(Endpoint.parse(parts[4])) : Optional.empty(),
                        parts[5].equals(NONE) ? Optional.empty() : Optional.of(parts[5])));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "lend '" + text + "' has a VGPU, HOLDER or GPU that is not a number", e);
            } catch (VgpuFailure e) {
                throw new IllegalArgumentException("lend '" + text + "': " + e.detail(), e);
            }
        }
        Assembly.Phase phase = switch (require(fields, "phase")) {
            case "securing" -> Assembly.Phase.SECURING;
            case "released" -> Assembly.Phase.RELEASED;
            default ->
                throw new IllegalArgumentException("phase '" + fields.get("phase") + "' is not securing or released");
        };
        Optional<Instant> released = fields.containsKey("released")
                ? Optional.of(Instant.ofEpochMilli(number(fields, "released")))
                : Optional.empty();
        return new Assembly(
                number(fields, "job"),
                require(fields, "user"),
                require(fields, "node"),
                (int) number(fields, "vgpus"),
                (int) number(fields, "local"),
                phase,
                Instant.ofEpochMilli(number(fields, "planned")),
                released,
                lends);
    }

    private static String require(Map<String, String> fields, String key) {
        String value = fields.get(key);
        if (value == null) {
            throw new IllegalArgumentException("'" + key + "' is missing");
        }
        return value;
    }

    private static long number(Map<String, String> fields, String key) {
        try {
            return Long.parseLong(require(fields, key));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + key + "=" + fields.get(key) + "' is not a number");
        }
    }

    private static String word(String what, String value) {
        if (!WORD.matcher(value).matches()) {
            throw new IllegalArgumentException(what + " '" + value + "' cannot be written to the ledger: expected "
                    + "1 to 128 of A-Z a-z 0-9 . _ @ + -");
        }
        return value;
    }

    private static String sealed(String body) {
        return body + " " + crcField(body);
    }

    private static String crcField(String body) {
        CRC32C crc = new CRC32C();
        crc.update(body.getBytes(StandardCharsets.US_ASCII));
        return "crc=" + HexFormat.of().toHexDigits((int) crc.getValue());
    }
}
