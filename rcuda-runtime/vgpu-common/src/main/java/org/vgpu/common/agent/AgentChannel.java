package org.vgpu.common.agent;

import static org.vgpu.common.agent.AgentChannelChecks.checkCount;
import static org.vgpu.common.agent.AgentChannelChecks.checkDistinctStats;
import static org.vgpu.common.agent.AgentChannelChecks.checkEnd;
import static org.vgpu.common.agent.AgentChannelChecks.checkEndpoint;
import static org.vgpu.common.agent.AgentChannelChecks.checkJob;
import static org.vgpu.common.agent.AgentChannelChecks.checkLength;
import static org.vgpu.common.agent.AgentChannelChecks.checkMac;
import static org.vgpu.common.agent.AgentChannelChecks.checkNonce;
import static org.vgpu.common.agent.AgentChannelChecks.checkRange;
import static org.vgpu.common.agent.AgentChannelChecks.checkReason;
import static org.vgpu.common.agent.AgentChannelChecks.checkToken;
import static org.vgpu.common.agent.AgentChannelChecks.checkVgpu;
import static org.vgpu.common.agent.AgentChannelChecks.cleanReason;
import static org.vgpu.common.agent.AgentChannelChecks.requireValid;
import static org.vgpu.common.contract.BridgeContract.GPU_INDEX_MAX;
import static org.vgpu.common.contract.BridgeContract.REQUEST_LINE_BYTES;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;

/**
 * The migration agent's channel to the tracker, both sides' one codec: its messages, formatted and parsed. The
 * migration agent (TrackerLink) formats requests and parses replies; the tracker parses requests and formats replies.
 * The migration agent opens the connection (the tracker may not open connections into jobs) and long-polls: the
 * tracker holds a poll up to {@link #HOLD_SECONDS} and answers at once when it has a command for the job. One request
 * line, one reply line, at most {@link BridgeContract#REQUEST_LINE_BYTES} / {@link BridgeContract#REPLY_LINE_BYTES}.
 *
 * <p>The messages are described once, in this module's contract/agent-channel/messages.conf (the grammar: words,
 * limits, each message's fields in order), from which {@link AgentChannelGrammar} is generated; the messages here
 * format with it and the parsers ({@link AgentRequestParser}, {@link AgentReplyParser}) read with it. Golden lines that
 * both ends' tests replay are in contract/agent-channel/transcripts.txt.
 *
 * <p>A migrate command carries a mac ({@link #mac}, {@link #verify}; see {@link MigrateCommandMac}). Parsing refuses
 * anything off the grammar with a {@link ParseError} whose message says, in vgpu's words, which field is wrong; it
 * never echoes a token.
 */
public final class AgentChannel {
    /** The first word of every request: the tracker's socket dispatches on it. */
    public static final String WORD = AgentChannelGrammar.AGENT;

    public static final String POLL = AgentChannelGrammar.POLL;
    public static final String DONE = AgentChannelGrammar.DONE;
    public static final String BYE = AgentChannelGrammar.BYE;
    public static final String IDLE = AgentChannelGrammar.IDLE;
    public static final String MIGRATE = AgentChannelGrammar.MIGRATE;
    public static final String SUCCEEDED = AgentChannelGrammar.SUCCEEDED;
    public static final String FAILED = AgentChannelGrammar.FAILED;
    public static final String MAC_PREFIX = AgentChannelGrammar.MAC_PREFIX;
    public static final String END_PREFIX = AgentChannelGrammar.END_PREFIX;

    /** The latest hinted end a poll may carry, 9999-12-31T23:59:59Z: a hint beyond it is a mistake, not a plan. */
    public static final Instant END_MAX = Instant.ofEpochSecond(AgentChannelGrammar.END_MAX_SECONDS);

    /** How long the tracker holds a poll without a command; the migration agent's read timeout must exceed it. */
    public static final int HOLD_SECONDS = AgentChannelGrammar.HOLD_SECONDS;

    public static final int NONCE_MIN_HEX = AgentChannelGrammar.NONCE_MIN_HEX;
    public static final int NONCE_MAX_HEX = AgentChannelGrammar.NONCE_MAX_HEX;
    /** A reason is cut to this many characters, so a done line with a full-size token still fits. */
    public static final int REASON_MAX_CHARS = AgentChannelGrammar.REASON_MAX_CHARS;

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
            return AgentChannelGrammar.localGpu(gpu);
        }
    }

    /** A GPU worker's endpoint. */
    public record RemoteWorker(Endpoint endpoint) implements Where {
        public RemoteWorker {
            requireValid(checkEndpoint(endpoint));
        }

        @Override
        public String format() {
            return AgentChannelGrammar.remoteWorker(endpoint);
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
            return AgentChannelGrammar.remoteTarget(endpoint, sessionToken);
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
            return AgentChannelGrammar.stat(vgpu, where.format(), calls, bytes, remoteWaitMs, liveBytes);
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
            return AgentChannelGrammar.pollRequest(
                    credential.job(),
                    credential.vgpu(),
                    credential.token(),
                    nonce,
                    expectedEnd.map(Instant::getEpochSecond),
                    stats.stream().map(Stat::format).toList());
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
            return AgentChannelGrammar.doneRequest(
                    credential.job(), credential.vgpu(), credential.token(), id, outcome.format());
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
            return AgentChannelGrammar.byeRequest(credential.job(), credential.vgpu(), credential.token());
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
            return AgentChannelGrammar.succeededOutcome(blockedMs, bytes);
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
            return AgentChannelGrammar.failedOutcome(reason);
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
            return AgentChannelGrammar.IDLE_REPLY;
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
            return AgentChannelGrammar.migrateReply(id, vgpu, target.format(), mac);
        }
    }

    /** The done (or bye) was recorded. */
    public record Accepted() implements DoneReply {
        @Override
        public String format() {
            return AgentChannelGrammar.ACCEPTED_REPLY;
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
            return AgentChannelGrammar.refusedReply(reason);
        }
    }

    // ---------------------------------------------------------------- mac

    /** The lowercase hex HMAC-SHA256 of {@code <nonce> migrate <id> <vgpu> <target>} under the token's UTF-8 bytes. */
    public static String mac(String token, String nonce, long id, int vgpu, Target target) {
        return MigrateCommandMac.mac(token, nonce, id, vgpu, target);
    }

    /**
     * Whether {@code command} was signed with {@code token} for the poll that sent {@code nonce}. Compares in
     * constant time, so the time taken tells nothing about how much of a forged mac was right.
     */
    public static boolean verify(String token, String nonce, Migrate command) {
        return MigrateCommandMac.verify(token, nonce, command);
    }

    // ---------------------------------------------------------------- parsing

    /** The tracker's side: a request line (starting with {@link #WORD}). */
    public static Request parseRequest(String line) {
        return AgentRequestParser.parse(line);
    }

    /** The migration agent's side: the tracker's answer to a poll. */
    public static PollReply parsePollReply(String line) {
        return AgentReplyParser.parsePollReply(line);
    }

    /** The migration agent's side: the tracker's answer to a done or a bye. */
    public static DoneReply parseDoneReply(String line) {
        return AgentReplyParser.parseDoneReply(line);
    }
}
