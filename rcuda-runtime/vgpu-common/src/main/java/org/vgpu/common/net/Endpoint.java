package org.vgpu.common.net;

import org.vgpu.common.error.InputException;

/**
 * A host and TCP port as written on command lines and in line protocols: {@code HOST:PORT}, with
 * IPv6 literals in brackets ({@code [::1]:7000}). Port 0 asks the system for any free port.
 */
public record Endpoint(String host, int port) {
    public Endpoint {
        if (host == null || host.isEmpty() || host.chars().anyMatch(c -> c <= ' ' || c > '~' || c == '[' || c == ']')) {
            throw new InputException("a host must be a name or address without spaces or brackets, got '" + host + "'");
        }
        if (port < 0 || port > 65535) {
            throw new InputException("a port must be in [0, 65535], got " + port);
        }
    }

    /**
     * Parses {@code HOST:PORT} or {@code [IPV6]:PORT}.
     *
     * @throws InputException saying what is wrong
     */
    public static Endpoint parse(String text) {
        if (text == null) {
            throw new InputException("expected HOST:PORT, got nothing");
        }
        int colon = text.lastIndexOf(':');
        if (colon <= 0 || colon == text.length() - 1) {
            throw new InputException("expected HOST:PORT, got '" + text + "'");
        }
        String host = text.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]") && host.length() > 2) {
            host = host.substring(1, host.length() - 1);
        } else if (host.contains(":")) {
            throw new InputException("write an IPv6 address in brackets, [ADDRESS]:PORT, got '" + text + "'");
        }
        String port = text.substring(colon + 1);
        if (!port.chars().allMatch(Character::isDigit) || port.length() > 5) {
            throw new InputException("expected a port number after ':', got '" + text + "'");
        }
        return new Endpoint(host, Integer.parseInt(port));
    }

    /** Whether the host is a wildcard address: a socket bound there listens on every interface, and nobody can connect to it by that name. */
    public boolean isWildcard() {
        return host.equals("0.0.0.0") || host.equals("::") || host.equals("0:0:0:0:0:0:0:0");
    }

    /** The same endpoint on another host. */
    public Endpoint withHost(String newHost) {
        return new Endpoint(newHost, port);
    }

    @Override
    public String toString() {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
}
