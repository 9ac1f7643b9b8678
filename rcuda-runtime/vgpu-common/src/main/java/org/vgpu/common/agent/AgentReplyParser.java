package org.vgpu.common.agent;

import static org.vgpu.common.agent.AgentChannelChecks.checkMac;
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
import static org.vgpu.common.agent.AgentChannelGrammar.ACCEPTED_REPLY;
import static org.vgpu.common.agent.AgentChannelGrammar.IDLE;
import static org.vgpu.common.agent.AgentChannelGrammar.IDLE_REPLY;
import static org.vgpu.common.agent.AgentChannelGrammar.IDLE_REPLY_FIELDS;
import static org.vgpu.common.agent.AgentChannelGrammar.MAC_PREFIX;
import static org.vgpu.common.agent.AgentChannelGrammar.MIGRATE;
import static org.vgpu.common.agent.AgentChannelGrammar.MIGRATE_REPLY;
import static org.vgpu.common.agent.AgentChannelGrammar.MIGRATE_REPLY_FIELDS;
import static org.vgpu.common.agent.AgentChannelGrammar.MIGRATE_REPLY_HEX;
import static org.vgpu.common.agent.AgentChannelGrammar.MIGRATE_REPLY_ID;
import static org.vgpu.common.agent.AgentChannelGrammar.MIGRATE_REPLY_TARGET;
import static org.vgpu.common.agent.AgentChannelGrammar.MIGRATE_REPLY_VGPU;
import static org.vgpu.common.agent.AgentChannelGrammar.REFUSED_REPLY_REASON;
import static org.vgpu.common.contract.BridgeContract.PLACEMENT_LOCAL;
import static org.vgpu.common.contract.BridgeContract.PLACEMENT_REMOTE;
import static org.vgpu.common.contract.BridgeContract.REPLY_ERROR_WORD;
import static org.vgpu.common.contract.BridgeContract.REPLY_LINE_BYTES;
import static org.vgpu.common.contract.BridgeContract.REPLY_OK_WORD;

import org.vgpu.common.agent.AgentChannel.Accepted;
import org.vgpu.common.agent.AgentChannel.DoneReply;
import org.vgpu.common.agent.AgentChannel.Idle;
import org.vgpu.common.agent.AgentChannel.LocalGpu;
import org.vgpu.common.agent.AgentChannel.Migrate;
import org.vgpu.common.agent.AgentChannel.ParseError;
import org.vgpu.common.agent.AgentChannel.PollReply;
import org.vgpu.common.agent.AgentChannel.Refused;
import org.vgpu.common.agent.AgentChannel.RemoteTarget;
import org.vgpu.common.agent.AgentChannel.Target;

/** The migration agent's side of its channel: the tracker's reply line read into its message. */
final class AgentReplyParser {
    private AgentReplyParser() {}

    static PollReply parsePollReply(String line) {
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
                expectFields(fields, IDLE_REPLY_FIELDS, "'" + IDLE_REPLY + "'");
                yield new Idle();
            }
            case MIGRATE -> {
                expectFields(fields, MIGRATE_REPLY_FIELDS, "'" + MIGRATE_REPLY + "'");
                long id = parseCount("the migration id", fields[MIGRATE_REPLY_ID]);
                int vgpu = parseVgpu(fields[MIGRATE_REPLY_VGPU]);
                Target target = parseTarget(fields[MIGRATE_REPLY_TARGET]);
                String signed = fields[MIGRATE_REPLY_HEX];
                if (!signed.startsWith(MAC_PREFIX)) {
                    throw new ParseError(
                            "a migrate command ends with " + MAC_PREFIX + "<hex>, got '" + echo(signed) + "'");
                }
                String mac = signed.substring(MAC_PREFIX.length());
                requireParsed(checkMac(mac));
                yield new Migrate(id, vgpu, target, mac);
            }
            default ->
                throw new ParseError(
                        "a reply to an agent poll is 'ok idle' or 'ok migrate ...', got '" + echo(line) + "'");
        };
    }

    static DoneReply parseDoneReply(String line) {
        String[] fields = fields(line, REPLY_LINE_BYTES, "a reply to an agent done");
        if (fields[0].equals(REPLY_ERROR_WORD)) {
            return parseRefused(line);
        }
        if (!line.equals(ACCEPTED_REPLY)) {
            throw new ParseError("a reply to an agent done is 'ok' or 'error <reason>', got '" + echo(line) + "'");
        }
        return new Accepted();
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
        return new Refused(afterFields(line, REFUSED_REPLY_REASON));
    }
}
