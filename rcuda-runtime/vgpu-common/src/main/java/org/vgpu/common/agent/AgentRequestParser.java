package org.vgpu.common.agent;

import static org.vgpu.common.agent.AgentChannelChecks.checkDistinctStats;
import static org.vgpu.common.agent.AgentChannelChecks.checkJob;
import static org.vgpu.common.agent.AgentChannelChecks.checkNonce;
import static org.vgpu.common.agent.AgentChannelChecks.checkRange;
import static org.vgpu.common.agent.AgentChannelChecks.checkToken;
import static org.vgpu.common.agent.AgentChannelChecks.echo;
import static org.vgpu.common.agent.AgentChannelChecks.requireParsed;
import static org.vgpu.common.agent.AgentChannelFields.afterFields;
import static org.vgpu.common.agent.AgentChannelFields.expectFields;
import static org.vgpu.common.agent.AgentChannelFields.fields;
import static org.vgpu.common.agent.AgentChannelFields.parseCount;
import static org.vgpu.common.agent.AgentChannelFields.parseEndpoint;
import static org.vgpu.common.agent.AgentChannelFields.parseGpu;
import static org.vgpu.common.agent.AgentChannelFields.parseVgpu;
import static org.vgpu.common.agent.AgentChannelGrammar.AGENT;
import static org.vgpu.common.agent.AgentChannelGrammar.BYE;
import static org.vgpu.common.agent.AgentChannelGrammar.BYE_REQUEST;
import static org.vgpu.common.agent.AgentChannelGrammar.BYE_REQUEST_FIELDS;
import static org.vgpu.common.agent.AgentChannelGrammar.BYE_REQUEST_JOB;
import static org.vgpu.common.agent.AgentChannelGrammar.BYE_REQUEST_TOKEN;
import static org.vgpu.common.agent.AgentChannelGrammar.BYE_REQUEST_VGPU;
import static org.vgpu.common.agent.AgentChannelGrammar.DONE;
import static org.vgpu.common.agent.AgentChannelGrammar.DONE_REQUEST;
import static org.vgpu.common.agent.AgentChannelGrammar.DONE_REQUEST_FIELDS;
import static org.vgpu.common.agent.AgentChannelGrammar.DONE_REQUEST_ID;
import static org.vgpu.common.agent.AgentChannelGrammar.DONE_REQUEST_JOB;
import static org.vgpu.common.agent.AgentChannelGrammar.DONE_REQUEST_OUTCOME;
import static org.vgpu.common.agent.AgentChannelGrammar.DONE_REQUEST_TOKEN;
import static org.vgpu.common.agent.AgentChannelGrammar.DONE_REQUEST_VGPU;
import static org.vgpu.common.agent.AgentChannelGrammar.END_MAX_SECONDS;
import static org.vgpu.common.agent.AgentChannelGrammar.END_PREFIX;
import static org.vgpu.common.agent.AgentChannelGrammar.FAILED;
import static org.vgpu.common.agent.AgentChannelGrammar.FAILED_OUTCOME_FIELDS;
import static org.vgpu.common.agent.AgentChannelGrammar.FAILED_OUTCOME_REASON;
import static org.vgpu.common.agent.AgentChannelGrammar.POLL;
import static org.vgpu.common.agent.AgentChannelGrammar.POLL_REQUEST;
import static org.vgpu.common.agent.AgentChannelGrammar.POLL_REQUEST_FIELDS;
import static org.vgpu.common.agent.AgentChannelGrammar.POLL_REQUEST_JOB;
import static org.vgpu.common.agent.AgentChannelGrammar.POLL_REQUEST_NONCE;
import static org.vgpu.common.agent.AgentChannelGrammar.POLL_REQUEST_TOKEN;
import static org.vgpu.common.agent.AgentChannelGrammar.POLL_REQUEST_VGPU;
import static org.vgpu.common.agent.AgentChannelGrammar.STAT;
import static org.vgpu.common.agent.AgentChannelGrammar.STAT_PREFIX;
import static org.vgpu.common.agent.AgentChannelGrammar.SUCCEEDED;
import static org.vgpu.common.agent.AgentChannelGrammar.SUCCEEDED_OUTCOME;
import static org.vgpu.common.agent.AgentChannelGrammar.SUCCEEDED_OUTCOME_BLOCKED_MS;
import static org.vgpu.common.agent.AgentChannelGrammar.SUCCEEDED_OUTCOME_BYTES;
import static org.vgpu.common.agent.AgentChannelGrammar.SUCCEEDED_OUTCOME_FIELDS;
import static org.vgpu.common.contract.BridgeContract.PLACEMENT_LOCAL;
import static org.vgpu.common.contract.BridgeContract.PLACEMENT_REMOTE;
import static org.vgpu.common.contract.BridgeContract.REQUEST_LINE_BYTES;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.vgpu.common.agent.AgentChannel.Bye;
import org.vgpu.common.agent.AgentChannel.Credential;
import org.vgpu.common.agent.AgentChannel.Done;
import org.vgpu.common.agent.AgentChannel.Failed;
import org.vgpu.common.agent.AgentChannel.LocalGpu;
import org.vgpu.common.agent.AgentChannel.Outcome;
import org.vgpu.common.agent.AgentChannel.ParseError;
import org.vgpu.common.agent.AgentChannel.Poll;
import org.vgpu.common.agent.AgentChannel.RemoteWorker;
import org.vgpu.common.agent.AgentChannel.Request;
import org.vgpu.common.agent.AgentChannel.Stat;
import org.vgpu.common.agent.AgentChannel.Succeeded;
import org.vgpu.common.agent.AgentChannel.Where;

/** The tracker's side of the migration agent's channel: a request line read into its message. */
final class AgentRequestParser {
    /** The figures of a stat after its {@code v<vgpu>=}, and how many there are. */
    private static final String STAT_FIGURES = STAT.substring(STAT.indexOf('=') + 1);

    private static final int STAT_PARTS = STAT_FIGURES.split(",").length;

    private AgentRequestParser() {}

    static Request parse(String line) {
        String[] fields = fields(line, REQUEST_LINE_BYTES, "an agent request");
        if (fields.length < 2 || !fields[0].equals(AGENT)) {
            throw new ParseError("an agent request starts with '" + AGENT + " " + POLL + "', '" + AGENT + " " + DONE
                    + "' or '" + AGENT + " " + BYE + "', got '" + echo(line) + "'");
        }
        return switch (fields[1]) {
            case POLL -> parsePoll(fields);
            case DONE -> parseDone(fields, line);
            case BYE -> {
                if (fields.length != BYE_REQUEST_FIELDS) {
                    throw new ParseError("usage: " + BYE_REQUEST);
                }
                yield new Bye(parseCredential(fields, BYE_REQUEST_JOB, BYE_REQUEST_VGPU, BYE_REQUEST_TOKEN));
            }
            default ->
                throw new ParseError("unknown agent request '" + echo(fields[1]) + "': expected " + POLL + ", " + DONE
                        + " or " + BYE);
        };
    }

    private static Poll parsePoll(String[] fields) {
        if (fields.length < POLL_REQUEST_FIELDS) {
            throw new ParseError("usage: " + POLL_REQUEST);
        }
        Credential credential = parseCredential(fields, POLL_REQUEST_JOB, POLL_REQUEST_VGPU, POLL_REQUEST_TOKEN);
        String nonce = fields[POLL_REQUEST_NONCE];
        requireParsed(checkNonce(nonce));
        int next = POLL_REQUEST_FIELDS;
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

    /** The hinted end: whole seconds since 1970, 1 up to the channel's end_max_seconds. */
    private static Instant parseEnd(String field) {
        long seconds = parseCount("the job's expected end (" + END_PREFIX + ")", field);
        requireParsed(checkRange(
                "the job's expected end (" + END_PREFIX + ", seconds since 1970)", seconds, 1, END_MAX_SECONDS));
        return Instant.ofEpochSecond(seconds);
    }

    private static Done parseDone(String[] fields, String line) {
        if (fields.length < DONE_REQUEST_FIELDS) {
            throw new ParseError("usage: " + DONE_REQUEST);
        }
        Credential credential = parseCredential(fields, DONE_REQUEST_JOB, DONE_REQUEST_VGPU, DONE_REQUEST_TOKEN);
        long id = parseCount("the migration id", fields[DONE_REQUEST_ID]);
        Outcome outcome = switch (fields[DONE_REQUEST_OUTCOME]) {
            case SUCCEEDED -> {
                expectFields(
                        fields, DONE_REQUEST_OUTCOME + SUCCEEDED_OUTCOME_FIELDS, "'... " + SUCCEEDED_OUTCOME + "'");
                yield new Succeeded(
                        parseCount("blocked-ms", fields[DONE_REQUEST_OUTCOME + SUCCEEDED_OUTCOME_BLOCKED_MS]),
                        parseCount("bytes", fields[DONE_REQUEST_OUTCOME + SUCCEEDED_OUTCOME_BYTES]));
            }
            case FAILED -> {
                if (fields.length < DONE_REQUEST_OUTCOME + FAILED_OUTCOME_FIELDS) {
                    throw new ParseError("a failed migration needs a reason after '" + FAILED + "'");
                }
                yield new Failed(afterFields(line, DONE_REQUEST_OUTCOME + FAILED_OUTCOME_REASON));
            }
            default ->
                throw new ParseError("a migration's outcome is '" + SUCCEEDED + "' or '" + FAILED + "', got '"
                        + echo(fields[DONE_REQUEST_OUTCOME]) + "'");
        };
        return new Done(credential, id, outcome);
    }

    private static Credential parseCredential(String[] fields, int jobAt, int vgpuAt, int tokenAt) {
        requireParsed(checkJob(fields[jobAt]));
        int vgpu = parseVgpu(fields[vgpuAt]);
        requireParsed(checkToken(fields[tokenAt]));
        return new Credential(fields[jobAt], vgpu, fields[tokenAt]);
    }

    private static Stat parseStat(String field) {
        int equals = field.indexOf('=');
        if (!field.startsWith(STAT_PREFIX) || equals < 0) {
            throw new ParseError("a stat is " + STAT + ", got '" + echo(field) + "'");
        }
        int vgpu = parseVgpu(field.substring(STAT_PREFIX.length(), equals));
        String[] parts = field.substring(equals + 1).split(",", -1);
        if (parts.length != STAT_PARTS) {
            throw new ParseError("the stat of vGPU " + vgpu + " has " + parts.length
                    + " comma-separated parts, expected " + STAT_PARTS + ": " + STAT_FIGURES);
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
}
