package org.vgpu.common.agent;

import static org.vgpu.common.agent.AgentChannelGrammar.END_MAX_SECONDS;
import static org.vgpu.common.agent.AgentChannelGrammar.MAC_HEX;
import static org.vgpu.common.agent.AgentChannelGrammar.NONCE_MAX_HEX;
import static org.vgpu.common.agent.AgentChannelGrammar.NONCE_MIN_HEX;
import static org.vgpu.common.agent.AgentChannelGrammar.REASON_MAX_CHARS;
import static org.vgpu.common.contract.BridgeContract.HOST_BYTES;
import static org.vgpu.common.contract.BridgeContract.JOB_ID_MAX;
import static org.vgpu.common.contract.BridgeContract.TOKEN_BYTES;
import static org.vgpu.common.contract.BridgeContract.VGPUS_MAX;

import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

import org.vgpu.common.agent.AgentChannel.ParseError;
import org.vgpu.common.agent.AgentChannel.Stat;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.LineText;
import org.vgpu.common.net.Endpoint;

/**
 * The limits of the migration agent's channel on single values, shared by the messages' constructors (which refuse
 * a value off the grammar with {@link IllegalArgumentException}) and the parsers (which refuse a line with
 * {@link ParseError}). Each check answers null when the value is fine, else the problem in vgpu's words; none
 * echoes a token.
 */
final class AgentChannelChecks {
    static final Pattern DECIMAL = Pattern.compile("0|[1-9][0-9]{0,18}");
    static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]+");
    private static final Pattern LOWER_HEX = Pattern.compile("[0-9a-f]+");
    private static final Pattern TOKEN = Pattern.compile(BridgeContract.TOKEN_CHAR_CLASS + "+");
    private static final Pattern HOST_NAME = Pattern.compile(BridgeContract.HOST_CHAR_CLASS + "+");
    private static final int ECHOED_CHARS = 40;

    private AgentChannelChecks() {}

    static String checkJob(String job) {
        if (job == null
                || !DECIMAL.matcher(job).matches()
                || Long.parseLong(job) < 1
                || Long.parseLong(job) > JOB_ID_MAX) {
            return "the job must be a Slurm job id 1.." + JOB_ID_MAX + ", got '" + echo(job) + "'";
        }
        return null;
    }

    static String checkVgpu(int vgpu) {
        return checkRange("the vGPU index", vgpu, 0, VGPUS_MAX - 1);
    }

    static String checkRange(String name, long value, long min, long max) {
        return value < min || value > max ? name + " must be in " + min + ".." + max + ", got " + value : null;
    }

    static String checkCount(String name, long value) {
        return value < 0 ? name + " must not be negative, got " + value : null;
    }

    /** Never echoes the token: it is a secret. */
    static String checkToken(String token) {
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

    static String checkEnd(Instant end) {
        return end.getNano() != 0
                ? "the job's expected end is whole seconds, got " + end
                : checkRange("the job's expected end (seconds since 1970)", end.getEpochSecond(), 1, END_MAX_SECONDS);
    }

    static String checkNonce(String nonce) {
        if (nonce == null
                || nonce.length() < NONCE_MIN_HEX
                || nonce.length() > NONCE_MAX_HEX
                || !LOWER_HEX.matcher(nonce).matches()) {
            return "the nonce must be " + NONCE_MIN_HEX + " to " + NONCE_MAX_HEX + " lowercase hex digits, got '"
                    + echo(nonce) + "'";
        }
        return null;
    }

    static String checkMac(String mac) {
        if (mac == null || mac.length() != MAC_HEX || !LOWER_HEX.matcher(mac).matches()) {
            return "the mac must be " + MAC_HEX + " lowercase hex digits (HMAC-SHA256)";
        }
        return null;
    }

    static String checkHostName(String host) {
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

    static String checkEndpoint(Endpoint endpoint) {
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

    static String checkDistinctStats(List<Stat> stats) {
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

    static String checkReason(String reason) {
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

    static String checkLength(String what, String line, int maxBytes) {
        return line.length() > maxBytes
                ? what + " has " + line.length() + " characters, at most " + maxBytes + " fit a line"
                : null;
    }

    /** Any text made a valid reason: one printable line, trimmed, cut to the channel's reason_max_chars. */
    static String cleanReason(String text) {
        String cleaned = LineText.printable(text == null ? "" : text, REASON_MAX_CHARS)
                .replaceAll(" {2,}", " ")
                .strip();
        return cleaned.isEmpty() ? "no reason given" : cleaned;
    }

    /** A parser's finding. */
    static void requireParsed(String problem) {
        if (problem != null) {
            throw new ParseError(problem);
        }
    }

    /** A constructor's finding: the caller built a value off the grammar. */
    static void requireValid(String problem) {
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
    }

    /** A field as an error message may show it: printable and short. */
    static String echo(String text) {
        return text == null ? "" : LineText.withoutSecrets(text, ECHOED_CHARS);
    }
}
