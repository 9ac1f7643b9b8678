package org.vgpu.siteconfig;

import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A TCP endpoint, {@code host:port}; an IPv6 address is written in brackets, {@code [::1]:7400}. */
public record Endpoint(String host, int port) {
    private static final Pattern HOST_PORT = Pattern.compile("(\\[[0-9A-Fa-f:.]+]|[A-Za-z0-9][A-Za-z0-9.-]*):(\\d{1,5})");

    public Endpoint {
        Objects.requireNonNull(host, "host");
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be 1..65535, got " + port);
        }
    }

    /**
     * Parses {@code host:port}.
     *
     * @throws IllegalArgumentException saying what is expected
     */
    public static Endpoint parse(String value) {
        Matcher matcher = HOST_PORT.matcher(value);
        if (!matcher.matches()) {
            throw new IllegalArgumentException("'" + value + "' is not an endpoint; expected host:port,"
                    + " e.g. 127.0.0.1:7400 or tracker.cluster:7400");
        }
        int port = Integer.parseInt(matcher.group(2));
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port " + port + " in '" + value + "' is out of range; expected 1..65535");
        }
        return new Endpoint(matcher.group(1), port);
    }

    @Override
    public String toString() {
        return host + ":" + port;
    }
}
