package org.vgpu.common.agent;

import static org.vgpu.common.contract.BridgeContract.GPU_INDEX_MAX;
import static org.vgpu.common.contract.BridgeContract.HOST_BYTES;
import static org.vgpu.common.contract.BridgeContract.JOB_ID_MAX;
import static org.vgpu.common.contract.BridgeContract.PLACEMENT_LOCAL;
import static org.vgpu.common.contract.BridgeContract.PLACEMENT_REMOTE;
import static org.vgpu.common.contract.BridgeContract.REPLY_ERROR_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_LINE_BYTES;
import static org.vgpu.common.contract.BridgeContract.REPLY_OK_WORD;
import static org.vgpu.common.contract.BridgeContract.REQUEST_LINE_BYTES;
import static org.vgpu.common.contract.BridgeContract.TOKEN_BYTES;
import static org.vgpu.common.contract.BridgeContract.VGPUS_MAX;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineText;
import org.vgpu.common.net.Endpoint;

/**
 * The channel between a job's migration agent and the tracker, both sides' one codec. The agent opens the
 * connection (the tracker may not open connections into jobs) and long-polls: the tracker holds a poll up to
 * {@link #HOLD_SECONDS} and answers at once when it has a command for the job. One request line, one reply line,
 * printable ASCII, fields separated by exactly one space, at most {@link BridgeContract#REQUEST_LINE_BYTES} /
 * {@link BridgeContract#REPLY_LINE_BYTES}:
 *
 * <pre>
 *   request  = "agent poll" SP credential SP nonce [SP end] *(SP stat)
 *            | "agent done" SP credential SP id SP outcome
 *            | "agent bye" SP credential              (the app ends: no agent of the job polls until another one does)
 *   credential = job SP vgpu SP token        (the session token VGPU_REMOTE holds for borrowed vGPU vgpu,
 *                                             signed with the site key for (job, vgpu, worker id))
 *   job      = 1..job_id_max, decimal, no leading zero
 *   vgpu     = 0..vgpus_max-1
 *   token    = 1..token_bytes of token_chars
 *   nonce    = 16..64 lowercase hex digits, fresh per poll
 *   end      = "end=" 1..end_max                      (the user's hint: when the job expects to end, in seconds
 *                                                     since 1970-01-01T00:00:00Z; end_max is 9999-12-31T23:59:59Z;
 *                                                     absent: no hint, as in the polls of agents before it)
 *   stat     = "v" vgpu "=" where "," calls "," bytes "," remote-wait-ms "," live-bytes   (each vgpu at most once)
 *   where    = "local:" gpu | "remote:" host ":" port
 *   calls, bytes, remote-wait-ms = count, cumulative since the vGPU was opened (0 while it runs local)
 *   live-bytes = count, the vGPU's live allocations (the cost model's mem-sync size)
 *   id       = count, the tracker's migration id
 *   outcome  = "ok" SP blocked-ms SP bytes | "failed" SP reason
 *   count    = 0..2^63-1, decimal, no leading zero
 *   gpu      = 0..gpu_index_max (Slurm's index, the minor of /dev/nvidiaN)
 *   host     = 1..host_bytes of host_chars, not starting with "-" or "." | "[" IPv6 "]"
 *   port     = 1..65535
 *
 *   poll reply = "ok idle"                                  (nothing for this job within HOLD_SECONDS)
 *              | "ok migrate" SP id SP vgpu SP target SP "mac=" 64 lowercase hex digits
 *              | "error" SP reason
 *   target   = "local:" gpu                                 (grants node GPU gpu to the job, then moves onto it)
 *            | "remote:" host ":" port ":" token            (a fresh session token for the new worker)
 *   done reply = "ok" | "error" SP reason            (the reply to a bye too)
 *   reason   = printable text, non-empty, words separated by one space
 * </pre>
 *
 * <p>The mac is HMAC-SHA256, key the UTF-8 bytes of the poll's token, data {@code <nonce> migrate <id> <vgpu>
 * <target>}: only the tracker (which checks tokens, so knew it) and the job know the token, so the agent runs a
 * command only when {@link #verify} holds. The nonce ties the command to the poll it answers, so an old command
 * cannot be replayed.
 *
 * <p>Parsing refuses anything off the grammar with a {@link ParseError} whose message says, in vgpu's words, which
 * field is wrong; it never echoes a token.
 */
public final class AgentChannel {
    /** The first word of every request: the tracker's socket dispatches on it. */
    public static final String WORD = "agent";

    public static final String POLL = "poll";
    public static final String DONE = "done";
    public static final String BYE = "bye";
    public static final String IDLE = "idle";
    public static final String MIGRATE = "migrate";
    public static final String SUCCEEDED = "ok";
    public static final String FAILED = "failed";
    public static final String MAC_PREFIX = "mac=";
    public static final String END_PREFIX = "end=";

    /** The latest hinted end a poll may carry, 9999-12-31T23:59:59Z: a hint beyond it is a mistake, not a plan. */
    public static final Instant END_MAX = Instant.parse("9999-12-31T23:59:59Z");

    /** How long the tracker holds a poll without a command; the agent's read timeout must exceed it. */
    public static final int HOLD_SECONDS = 20;

    public static final int NONCE_MIN_HEX = 16;
    public static final int NONCE_MAX_HEX = 64;
    /** A reason is cut to this many characters, so a done line with a full-size token still fits. */
    public static final int REASON_MAX_CHARS = 1024;

    private static final String MAC_ALGORITHM = "HmacSHA256";
    private static final int MAC_HEX = 64;
    private static final Pattern DECIMAL = Pattern.compile("0|[1-9][0-9]{0,18}");
    private static final Pattern LOWER_HEX = Pattern.compile("[0-9a-f]+");
    private static final Pattern TOKEN = Pattern.compile(BridgeContract.TOKEN_CHAR_CLASS + "+");
    private static final Pattern HOST_NAME = Pattern.compile(BridgeContract.HOST_CHAR_CLASS + "+");
    private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]+");
    private static final int ECHOED_CHARS = 40;

    private AgentChannel() {}

    /** A line that is not on the channel's grammar; the message says which field and why. */
    public static final class ParseError extends VgpuFailure {
        private static final long serialVersionUID = 1L;

        ParseError(String message) {
            super("AGENT_CHANNEL_MALFORMED", message, null);
        }
    }

    // ---------------------------------------------------------------- values

    /**
     * Who asks: the job, its borrowed vGPU and that vGPU's session token. The token is a bearer secret:
     * {@link #toString} leaves it out.
     */
    public record Credential(String job, int vgpu, String token) {
        public Credential {
            requireValid(checkJob(job));
            requireValid(checkVgpu(vgpu));
            requireValid(checkToken(token));
        }

        String format() {
            return job + " " + vgpu + " " + token;
        }

        @Override
        public String toString() {
            return "Credential[job=" + job + ", vgpu=" + vgpu + ", token=(" + token.length() + " chars)]";
        }
    }

    /** Where a vGPU runs ({@link LocalGpu} or {@link RemoteWorker}), as a poll's stat says. */
    public sealed interface Where permits LocalGpu, RemoteWorker {
        String format();
    }

    /** Where a migration goes ({@link LocalGpu} or {@link RemoteTarget}). */
    public sealed interface Target permits LocalGpu, RemoteTarget {
        String format();
    }

    /** Node GPU {@code gpu}, Slurm's index (the minor of /dev/nvidiaN). */
    public record LocalGpu(int gpu) implements Where, Target {
        public LocalGpu {
            requireValid(checkRange("the GPU index", gpu, 0, GPU_INDEX_MAX));
        }

        @Override
        public String format() {
            return PLACEMENT_LOCAL + gpu;
        }
    }

    /** A GPU worker's endpoint. */
    public record RemoteWorker(Endpoint endpoint) implements Where {
        public RemoteWorker {
            requireValid(checkEndpoint(endpoint));
        }

        @Override
        public String format() {
            return PLACEMENT_REMOTE + endpoint;
        }
    }

    /** A GPU worker to move to, with the fresh session token the tracker issued for it (left out of toString). */
    public record RemoteTarget(Endpoint endpoint, String sessionToken) implements Target {
        public RemoteTarget {
            requireValid(checkEndpoint(endpoint));
            requireValid(checkToken(sessionToken));
        }

        @Override
        public String format() {
            return PLACEMENT_REMOTE + endpoint + ":" + sessionToken;
        }

        @Override
        public String toString() {
            return "RemoteTarget[endpoint=" + endpoint + ", sessionToken=(" + sessionToken.length() + " chars)]";
        }
    }

    /** One vGPU's figures in a poll, for the tracker's cost model. */
    public record Stat(int vgpu, Where where, long calls, long bytes, long remoteWaitMs, long liveBytes) {
        public Stat {
            requireValid(checkVgpu(vgpu));
            Objects.requireNonNull(where, "where");
            requireValid(checkCount("calls", calls));
            requireValid(checkCount("bytes", bytes));
            requireValid(checkCount("remote-wait-ms", remoteWaitMs));
            requireValid(checkCount("live-bytes", liveBytes));
        }

        String format() {
            return "v" + vgpu + "=" + where.format() + "," + calls + "," + bytes + "," + remoteWaitMs + "," + liveBytes;
        }
    }

    // ---------------------------------------------------------------- requests

    /** What the agent sends. */
    public sealed interface Request permits Poll, Done, Bye {
        Credential credential();

        /** The request line, without its newline. */
        String format();
    }

    /**
     * Waits up to {@link #HOLD_SECONDS} for a command, reporting the job's vGPUs and, when the user gave one, the
     * job's expected end (whole seconds; the tracker's cost model weighs the remaining time by it).
     */
    public record Poll(Credential credential, String nonce, Optional<Instant> expectedEnd, List<Stat> stats)
            implements Request {
        public Poll {
            Objects.requireNonNull(credential, "credential");
            requireValid(checkNonce(nonce));
            Objects.requireNonNull(expectedEnd, "expectedEnd");
            expectedEnd.ifPresent(end -> requireValid(checkEnd(end)));
            stats = List.copyOf(stats);
            requireValid(checkDistinctStats(stats));
            requireValid(checkLength(
                    "an agent poll", formatPoll(credential, nonce, expectedEnd, stats), REQUEST_LINE_BYTES));
        }

        /** A poll without a hint of the job's end. */
        public Poll(Credential credential, String nonce, List<Stat> stats) {
            this(credential, nonce, Optional.empty(), stats);
        }

        /** A poll with as many of {@code stats}, in order, as fit the request line (the hint always does). */
        public static Poll fitting(
                Credential credential, String nonce, Optional<Instant> expectedEnd, List<Stat> stats) {
            List<Stat> kept = new ArrayList<>(stats);
            while (!kept.isEmpty()
                    && formatPoll(credential, nonce, expectedEnd, kept).length() > REQUEST_LINE_BYTES) {
                kept.removeLast();
            }
            return new Poll(credential, nonce, expectedEnd, kept);
        }

        @Override
        public String format() {
            return formatPoll(credential, nonce, expectedEnd, stats);
        }

        private static String formatPoll(
                Credential credential, String nonce, Optional<Instant> expectedEnd, List<Stat> stats) {
            StringBuilder line = new StringBuilder(WORD + " " + POLL + " " + credential.format() + " " + nonce);
            expectedEnd.ifPresent(end -> line.append(' ').append(END_PREFIX).append(end.getEpochSecond()));
            stats.forEach(stat -> line.append(' ').append(stat.format()));
            return line.toString();
        }
    }

    /** How migration {@code id} ended. */
    public record Done(Credential credential, long id, Outcome outcome) implements Request {
        public Done {
            Objects.requireNonNull(credential, "credential");
            requireValid(checkCount("the migration id", id));
            Objects.requireNonNull(outcome, "outcome");
        }

        @Override
        public String format() {
            return WORD + " " + DONE + " " + credential.format() + " " + id + " " + outcome.format();
        }
    }

    /**
     * The agent stops because its app ends ({@code vgpu run} returns, or the program it runs exits): the tracker
     * starts no move for the job until an agent polls again, and a command no agent took is withdrawn at once.
     */
    public record Bye(Credential credential) implements Request {
        public Bye {
            Objects.requireNonNull(credential, "credential");
        }

        @Override
        public String format() {
            return WORD + " " + BYE + " " + credential.format();
        }
    }

    /** A migration's outcome. */
    public sealed interface Outcome permits Succeeded, Failed {
        String format();
    }

    /** The vGPU moved: the app was blocked {@code blockedMs}, {@code bytes} were copied. */
    public record Succeeded(long blockedMs, long bytes) implements Outcome {
        public Succeeded {
            requireValid(checkCount("blocked-ms", blockedMs));
            requireValid(checkCount("bytes", bytes));
        }

        @Override
        public String format() {
            return SUCCEEDED + " " + blockedMs + " " + bytes;
        }
    }

    /** The vGPU did not move (it stays where it was), and why. */
    public record Failed(String reason) implements Outcome {
        public Failed {
            requireValid(checkReason(reason));
        }

        /** Any text made a valid reason: one printable line, trimmed, cut to {@link #REASON_MAX_CHARS}. */
        public static Failed because(String text) {
            return new Failed(cleanReason(text));
        }

        @Override
        public String format() {
            return FAILED + " " + reason;
        }
    }

    // ---------------------------------------------------------------- replies

    /** The tracker's answer to a poll. */
    public sealed interface PollReply permits Idle, Migrate, Refused {
        String format();
    }

    /** The tracker's answer to a done or a bye. */
    public sealed interface DoneReply permits Accepted, Refused {
        String format();
    }

    /** Nothing for the job within the hold. */
    public record Idle() implements PollReply {
        @Override
        public String format() {
            return REPLY_OK_WORD + " " + IDLE;
        }
    }

    /** Move vGPU {@code vgpu} to {@code target}; {@code mac} signs it for the poll's nonce (see {@link #verify}). */
    public record Migrate(long id, int vgpu, Target target, String mac) implements PollReply {
        public Migrate {
            requireValid(checkCount("the migration id", id));
            requireValid(checkVgpu(vgpu));
            Objects.requireNonNull(target, "target");
            requireValid(checkMac(mac));
        }

        /** The command for {@code token}'s poll with {@code nonce}, its mac computed. */
        public static Migrate signed(String token, String nonce, long id, int vgpu, Target target) {
            return new Migrate(id, vgpu, target, AgentChannel.mac(token, nonce, id, vgpu, target));
        }

        @Override
        public String format() {
            return REPLY_OK_WORD + " " + MIGRATE + " " + id + " " + vgpu + " " + target.format() + " " + MAC_PREFIX
                    + mac;
        }
    }

    /** The done (or bye) was recorded. */
    public record Accepted() implements DoneReply {
        @Override
        public String format() {
            return REPLY_OK_WORD;
        }
    }

    /** The tracker refused the request, and why. */
    public record Refused(String reason) implements PollReply, DoneReply {
        public Refused {
            requireValid(checkReason(reason));
        }

        /** Any text made a valid reason (see {@link Failed#because}). */
        public static Refused because(String text) {
            return new Refused(cleanReason(text));
        }

        @Override
        public String format() {
            return REPLY_ERROR_WORD + " " + reason;
        }
    }

    // ---------------------------------------------------------------- mac

    /** The lowercase hex HMAC-SHA256 of {@code <nonce> migrate <id> <vgpu> <target>} under the token's UTF-8 bytes. */
    public static String mac(String token, String nonce, long id, int vgpu, Target target) {
        requireValid(checkToken(token));
        requireValid(checkNonce(nonce));
        String data = nonce + " " + MIGRATE + " " + id + " " + vgpu + " " + target.format();
        try {
            Mac hmac = Mac.getInstance(MAC_ALGORITHM);
            hmac.init(new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), MAC_ALGORITHM));
            return HexFormat.of().formatHex(hmac.doFinal(data.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("every Java runtime has " + MAC_ALGORITHM, e);
        }
    }

    /**
     * Whether {@code command} was signed with {@code token} for the poll that sent {@code nonce}. Compares in
     * constant time, so the time taken tells nothing about how much of a forged mac was right.
     */
    public static boolean verify(String token, String nonce, Migrate command) {
        String expected = mac(token, nonce, command.id(), command.vgpu(), command.target());
        return MessageDigest.isEqual(
                expected.getBytes(StandardCharsets.US_ASCII), command.mac().getBytes(StandardCharsets.US_ASCII));
    }

    // ---------------------------------------------------------------- parsing

    /** The tracker's side: a request line (starting with {@link #WORD}). */
    public static Request parseRequest(String line) {
        String[] fields = fields(line, REQUEST_LINE_BYTES, "an agent request");
        if (fields.length < 2 || !fields[0].equals(WORD)) {
            throw new ParseError("an agent request starts with '" + WORD + " " + POLL + "', '" + WORD + " " + DONE
                    + "' or '" + WORD + " " + BYE + "', got '" + echo(line) + "'");
        }
        return switch (fields[1]) {
            case POLL -> parsePoll(fields);
            case DONE -> parseDone(fields, line);
            case BYE -> {
                if (fields.length != 5) {
                    throw new ParseError("usage: " + WORD + " " + BYE + " <job> <vgpu> <token>");
                }
                yield new Bye(parseCredential(fields));
            }
            default ->
                throw new ParseError("unknown agent request '" + echo(fields[1]) + "': expected " + POLL + ", " + DONE
                        + " or " + BYE);
        };
    }

    /** The agent's side: the tracker's answer to a poll. */
    public static PollReply parsePollReply(String line) {
        String[] fields = fields(line, REPLY_LINE_BYTES, "a reply to an agent poll");
        if (fields[0].equals(REPLY_ERROR_WORD)) {
            return parseRefused(line);
        }
        if (!fields[0].equals(REPLY_OK_WORD) || fields.length < 2) {
            throw new ParseError("a reply to an agent poll is 'ok idle', 'ok migrate ...' or 'error <reason>', got '"
                    + echo(line) + "'");
        }
        return switch (fields[1]) {
            case IDLE -> {
                expectFields(fields, 2, "'ok idle'");
                yield new Idle();
            }
            case MIGRATE -> {
                expectFields(fields, 6, "'ok migrate <id> <vgpu> <target> mac=<hex>'");
                long id = parseCount("the migration id", fields[2]);
                int vgpu = parseVgpu(fields[3]);
                Target target = parseTarget(fields[4]);
                if (!fields[5].startsWith(MAC_PREFIX)) {
                    throw new ParseError(
                            "a migrate command ends with " + MAC_PREFIX + "<hex>, got '" + echo(fields[5]) + "'");
                }
                String mac = fields[5].substring(MAC_PREFIX.length());
                requireParsed(checkMac(mac));
                yield new Migrate(id, vgpu, target, mac);
            }
            default ->
                throw new ParseError(
                        "a reply to an agent poll is 'ok idle' or 'ok migrate ...', got '" + echo(line) + "'");
        };
    }

    /** The agent's side: the tracker's answer to a done or a bye. */
    public static DoneReply parseDoneReply(String line) {
        String[] fields = fields(line, REPLY_LINE_BYTES, "a reply to an agent done");
        if (fields[0].equals(REPLY_ERROR_WORD)) {
            return parseRefused(line);
        }
        if (fields.length != 1 || !fields[0].equals(REPLY_OK_WORD)) {
            throw new ParseError("a reply to an agent done is 'ok' or 'error <reason>', got '" + echo(line) + "'");
        }
        return new Accepted();
    }

    private static Poll parsePoll(String[] fields) {
        if (fields.length < 6) {
            throw new ParseError(
                    "usage: " + WORD + " " + POLL + " <job> <vgpu> <token> <nonce> [end=<seconds>] [<stat> ...]");
        }
        Credential credential = parseCredential(fields);
        String nonce = fields[5];
        requireParsed(checkNonce(nonce));
        int next = 6;
        Optional<Instant> expectedEnd = Optional.empty();
        if (fields.length > next && fields[next].startsWith(END_PREFIX)) {
            expectedEnd = Optional.of(parseEnd(fields[next].substring(END_PREFIX.length())));
            next++;
        }
        List<Stat> stats = new ArrayList<>();
        for (int i = next; i < fields.length; i++) {
            stats.add(parseStat(fields[i]));
        }
        requireParsed(checkDistinctStats(stats));
        return new Poll(credential, nonce, expectedEnd, stats);
    }

    /** The hinted end: whole seconds since 1970, 1 up to {@link #END_MAX}. */
    private static Instant parseEnd(String field) {
        long seconds = parseCount("the job's expected end (" + END_PREFIX + ")", field);
        requireParsed(checkRange(
                "the job's expected end (" + END_PREFIX + ", seconds since 1970)",
                seconds,
                1,
                END_MAX.getEpochSecond()));
        return Instant.ofEpochSecond(seconds);
    }

    private static Done parseDone(String[] fields, String line) {
        if (fields.length < 7) {
            throw new ParseError("usage: " + WORD + " " + DONE + " <job> <vgpu> <token> <id> ok <blocked-ms> <bytes>"
                    + " | failed <reason>");
        }
        Credential credential = parseCredential(fields);
        long id = parseCount("the migration id", fields[5]);
        Outcome outcome = switch (fields[6]) {
            case SUCCEEDED -> {
                expectFields(fields, 9, "'... ok <blocked-ms> <bytes>'");
                yield new Succeeded(parseCount("blocked-ms", fields[7]), parseCount("bytes", fields[8]));
            }
            case FAILED -> {
                if (fields.length < 8) {
                    throw new ParseError("a failed migration needs a reason after '" + FAILED + "'");
                }
                yield new Failed(afterFields(line, 7));
            }
            default ->
                throw new ParseError("a migration's outcome is '" + SUCCEEDED + "' or '" + FAILED + "', got '"
                        + echo(fields[6]) + "'");
        };
        return new Done(credential, id, outcome);
    }

    private static Credential parseCredential(String[] fields) {
        requireParsed(checkJob(fields[2]));
        int vgpu = parseVgpu(fields[3]);
        requireParsed(checkToken(fields[4]));
        return new Credential(fields[2], vgpu, fields[4]);
    }

    private static Stat parseStat(String field) {
        int equals = field.indexOf('=');
        if (!field.startsWith("v") || equals < 0) {
            throw new ParseError("a stat is v<vgpu>=<where>,<calls>,<bytes>,<remote-wait-ms>,<live-bytes>, got '"
                    + echo(field) + "'");
        }
        int vgpu = parseVgpu(field.substring(1, equals));
        String[] parts = field.substring(equals + 1).split(",", -1);
        if (parts.length != 5) {
            throw new ParseError("the stat of vGPU " + vgpu + " has " + parts.length
                    + " comma-separated parts, expected 5: <where>,<calls>,<bytes>,<remote-wait-ms>,<live-bytes>");
        }
        Where where;
        if (parts[0].startsWith(PLACEMENT_LOCAL)) {
            where = new LocalGpu(parseGpu(parts[0].substring(PLACEMENT_LOCAL.length())));
        } else if (parts[0].startsWith(PLACEMENT_REMOTE)) {
            where = new RemoteWorker(parseEndpoint(parts[0].substring(PLACEMENT_REMOTE.length())));
        } else {
            throw new ParseError("where vGPU " + vgpu + " runs is local:<gpu> or remote:<host>:<port>, got '"
                    + echo(parts[0]) + "'");
        }
        return new Stat(
                vgpu,
                where,
                parseCount("calls", parts[1]),
                parseCount("bytes", parts[2]),
                parseCount("remote-wait-ms", parts[3]),
                parseCount("live-bytes", parts[4]));
    }

    private static Target parseTarget(String field) {
        if (field.startsWith(PLACEMENT_LOCAL)) {
            return new LocalGpu(parseGpu(field.substring(PLACEMENT_LOCAL.length())));
        }
        if (field.startsWith(PLACEMENT_REMOTE)) {
            String rest = field.substring(PLACEMENT_REMOTE.length());
            int colon = rest.lastIndexOf(':');
            if (colon < 0) {
                throw new ParseError("a remote target is remote:<host>:<port>:<session-token>, got a target without"
                        + " a session token");
            }
            String token = rest.substring(colon + 1);
            requireParsed(checkToken(token));
            return new RemoteTarget(parseEndpoint(rest.substring(0, colon)), token);
        }
        throw new ParseError(
                "a migration target is local:<gpu> or remote:<host>:<port>:<session-token>, got '" + echo(field) + "'");
    }

    private static Refused parseRefused(String line) {
        if (line.length() <= REPLY_ERROR_WORD.length() + 1) {
            throw new ParseError("an error reply needs a reason after '" + REPLY_ERROR_WORD + "'");
        }
        return new Refused(afterFields(line, 1));
    }

    /** The line split at single spaces, once checked to be one printable line within {@code maxBytes}. */
    private static String[] fields(String line, int maxBytes, String what) {
        if (line == null || line.isEmpty()) {
            throw new ParseError(what + " is an empty line");
        }
        requireParsed(checkLength(what, line, maxBytes));
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c < ' ' || c > '~') {
                throw new ParseError(what + " holds a character outside printable ASCII at position " + (i + 1));
            }
        }
        if (line.startsWith(" ") || line.endsWith(" ") || line.contains("  ")) {
            throw new ParseError(what + "'s fields are separated by exactly one space, none leading or trailing");
        }
        return line.split(" ");
    }

    /** The rest of the line after its first {@code count} fields (a reason, which may hold spaces). */
    private static String afterFields(String line, int count) {
        int at = 0;
        for (int i = 0; i < count; i++) {
            at = line.indexOf(' ', at) + 1;
        }
        return line.substring(at);
    }

    private static void expectFields(String[] fields, int count, String form) {
        if (fields.length != count) {
            throw new ParseError("expected " + form + ", got " + fields.length + " fields");
        }
    }

    private static long parseCount(String name, String field) {
        if (!DECIMAL.matcher(field).matches()) {
            throw new ParseError(name + " must be a decimal count without leading zeros, got '" + echo(field) + "'");
        }
        try {
            return Long.parseLong(field);
        } catch (NumberFormatException e) {
            throw new ParseError(name + " " + field + " is larger than " + Long.MAX_VALUE);
        }
    }

    private static int parseVgpu(String field) {
        long vgpu = parseCount("the vGPU index", field);
        requireParsed(checkRange("the vGPU index", vgpu, 0, VGPUS_MAX - 1));
        return (int) vgpu;
    }

    private static int parseGpu(String field) {
        long gpu = parseCount("the GPU index", field);
        requireParsed(checkRange("the GPU index", gpu, 0, GPU_INDEX_MAX));
        return (int) gpu;
    }

    private static Endpoint parseEndpoint(String text) {
        int colon = text.lastIndexOf(':');
        if (colon <= 0) {
            throw new ParseError("a worker is <host>:<port>, got '" + echo(text) + "'");
        }
        String host = text.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
            if (host.isEmpty() || !IPV6.matcher(host).matches() || !host.contains(":")) {
                throw new ParseError("a bracketed worker host must be an IPv6 address, got '" + echo(text) + "'");
            }
        } else {
            requireParsed(checkHostName(host));
        }
        long port = parseCount("the worker's port", text.substring(colon + 1));
        requireParsed(checkRange("the worker's port", port, 1, 65535));
        return new Endpoint(host, (int) port);
    }

    // ---------------------------------------------------------------- checks (null: fine, else the problem)

    private static String checkJob(String job) {
        if (job == null
                || !DECIMAL.matcher(job).matches()
                || Long.parseLong(job) < 1
                || Long.parseLong(job) > JOB_ID_MAX) {
            return "the job must be a Slurm job id 1.." + JOB_ID_MAX + ", got '" + echo(job) + "'";
        }
        return null;
    }

    private static String checkVgpu(int vgpu) {
        return checkRange("the vGPU index", vgpu, 0, VGPUS_MAX - 1);
    }

    private static String checkRange(String name, long value, long min, long max) {
        return value < min || value > max ? name + " must be in " + min + ".." + max + ", got " + value : null;
    }

    private static String checkCount(String name, long value) {
        return value < 0 ? name + " must not be negative, got " + value : null;
    }

    /** Never echoes the token: it is a secret. */
    private static String checkToken(String token) {
        if (token == null || token.isEmpty()) {
            return "a session token is missing";
        }
        if (token.length() > TOKEN_BYTES) {
            return "a session token has at most " + TOKEN_BYTES + " characters, got " + token.length();
        }
        if (!TOKEN.matcher(token).matches()) {
            return "a session token has only letters, digits and " + BridgeContract.TOKEN_CHARS;
        }
        return null;
    }

    private static String checkEnd(Instant end) {
        return end.getNano() != 0
                ? "the job's expected end is whole seconds, got " + end
                : checkRange(
                        "the job's expected end (seconds since 1970)",
                        end.getEpochSecond(),
                        1,
                        END_MAX.getEpochSecond());
    }

    private static String checkNonce(String nonce) {
        if (nonce == null
                || nonce.length() < NONCE_MIN_HEX
                || nonce.length() > NONCE_MAX_HEX
                || !LOWER_HEX.matcher(nonce).matches()) {
            return "the nonce must be " + NONCE_MIN_HEX + " to " + NONCE_MAX_HEX + " lowercase hex digits, got '"
                    + echo(nonce) + "'";
        }
        return null;
    }

    private static String checkMac(String mac) {
        if (mac == null || mac.length() != MAC_HEX || !LOWER_HEX.matcher(mac).matches()) {
            return "the mac must be " + MAC_HEX + " lowercase hex digits (HMAC-SHA256)";
        }
        return null;
    }

    private static String checkHostName(String host) {
        if (host.isEmpty()
                || host.length() > HOST_BYTES
                || !HOST_NAME.matcher(host).matches()
                || host.startsWith("-")
                || host.startsWith(".")) {
            return "a worker host is 1.." + HOST_BYTES + " letters, digits and " + BridgeContract.HOST_CHARS
                    + " not starting with - or ., or [IPv6], got '" + echo(host) + "'";
        }
        return null;
    }

    private static String checkEndpoint(Endpoint endpoint) {
        if (endpoint == null) {
            return "a worker endpoint is missing";
        }
        String port = checkRange("the worker's port", endpoint.port(), 1, 65535);
        if (port != null) {
            return port;
        }
        return endpoint.host().contains(":")
                ? (IPV6.matcher(endpoint.host()).matches() ? null : "a worker host is a name or an IPv6 address")
                : checkHostName(endpoint.host());
    }

    private static String checkDistinctStats(List<Stat> stats) {
        if (stats.size() > VGPUS_MAX) {
            return "a poll carries at most " + VGPUS_MAX + " stats, got " + stats.size();
        }
        Set<Integer> seen = new HashSet<>();
        for (Stat stat : stats) {
            if (!seen.add(stat.vgpu())) {
                return "a poll carries one stat per vGPU, vGPU " + stat.vgpu() + " has two";
            }
        }
        return null;
    }

    private static String checkReason(String reason) {
        if (reason == null || reason.isEmpty()) {
            return "a reason must not be empty";
        }
        if (!reason.equals(LineText.printable(reason, reason.length()))
                || !reason.equals(reason.strip())
                || reason.contains("  ")) {
            return "a reason is printable text, words separated by one space";
        }
        return null;
    }

    private static String checkLength(String what, String line, int maxBytes) {
        return line.length() > maxBytes
                ? what + " has " + line.length() + " characters, at most " + maxBytes + " fit a line"
                : null;
    }

    private static String cleanReason(String text) {
        String cleaned = LineText.printable(text == null ? "" : text, REASON_MAX_CHARS)
                .replaceAll(" {2,}", " ")
                .strip();
        return cleaned.isEmpty() ? "no reason given" : cleaned;
    }

    /** A parser's finding. */
    private static void requireParsed(String problem) {
        if (problem != null) {
            throw new ParseError(problem);
        }
    }

    /** A constructor's finding: the caller built a value off the grammar. */
    private static void requireValid(String problem) {
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
    }

    private static String echo(String text) {
        return text == null ? "" : LineText.printable(text, ECHOED_CHARS);
    }
}
