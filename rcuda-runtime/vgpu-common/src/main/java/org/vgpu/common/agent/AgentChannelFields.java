package org.vgpu.common.agent;

import static org.vgpu.common.agent.AgentChannelChecks.DECIMAL;
import static org.vgpu.common.agent.AgentChannelChecks.IPV6;
import static org.vgpu.common.agent.AgentChannelChecks.checkHostName;
import static org.vgpu.common.agent.AgentChannelChecks.checkLength;
import static org.vgpu.common.agent.AgentChannelChecks.checkRange;
import static org.vgpu.common.agent.AgentChannelChecks.echo;
import static org.vgpu.common.agent.AgentChannelChecks.requireParsed;
import static org.vgpu.common.contract.BridgeContract.GPU_INDEX_MAX;
import static org.vgpu.common.contract.BridgeContract.VGPUS_MAX;

import org.vgpu.common.agent.AgentChannel.ParseError;
import org.vgpu.common.net.Endpoint;

/**
 * How the parsers of the migration agent's channel read a line: split into fields once it is one printable line
 * within its limit, and each field read as the grammar says, or refused with a {@link ParseError} naming it.
 */
final class AgentChannelFields {
    private AgentChannelFields() {}

    /** The line split at single spaces, once checked to be one printable line within {@code maxBytes}. */
    static String[] fields(String line, int maxBytes, String what) {
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
    static String afterFields(String line, int count) {
        int at = 0;
        for (int i = 0; i < count; i++) {
            at = line.indexOf(' ', at) + 1;
        }
        return line.substring(at);
    }

    static void expectFields(String[] fields, int count, String form) {
        if (fields.length != count) {
            throw new ParseError("expected " + form + ", got " + fields.length + " fields");
        }
    }

    static long parseCount(String name, String field) {
        if (!DECIMAL.matcher(field).matches()) {
            throw new ParseError(name + " must be a decimal count without leading zeros, got '" + echo(field) + "'");
        }
        try {
            return Long.parseLong(field);
        } catch (NumberFormatException e) {
            throw new ParseError(name + " " + field + " is larger than " + Long.MAX_VALUE);
        }
    }

    static int parseVgpu(String field) {
        long vgpu = parseCount("the vGPU index", field);
        requireParsed(checkRange("the vGPU index", vgpu, 0, VGPUS_MAX - 1));
        return (int) vgpu;
    }

    static int parseGpu(String field) {
        long gpu = parseCount("the GPU index", field);
        requireParsed(checkRange("the GPU index", gpu, 0, GPU_INDEX_MAX));
        return (int) gpu;
    }

    static Endpoint parseEndpoint(String text) {
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
}
