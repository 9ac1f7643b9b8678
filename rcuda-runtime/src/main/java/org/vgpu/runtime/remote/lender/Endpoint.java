package org.vgpu.runtime.remote.lender;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * A host and TCP port as written on command lines and in line protocols: {@code HOST:PORT}, with
 * IPv6 literals in brackets ({@code [::1]:7000}). Port 0 asks the system for any free port.
 */
public record Endpoint(String host, int port) {
    public Endpoint {
        if (host == null || host.isEmpty() || host.chars().anyMatch(c -> c <= ' ' || c > '~' || c == '[' || c == ']')) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "a host must be a name or address without spaces or brackets, got '" + host + "'");
        }
        if (port < 0 || port > 65535) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "a port must be in [0, 65535], got " + port);
        }
    }

    /**
     * Parses {@code HOST:PORT} or {@code [IPV6]:PORT}.
     *
     * @throws VgpuException CUDA_ERROR_INVALID_VALUE saying what is wrong
     */
    public static Endpoint parse(String text) {
        if (text == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "expected HOST:PORT, got nothing");
        }
        int colon = text.lastIndexOf(':');
        if (colon <= 0 || colon == text.length() - 1) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "expected HOST:PORT, got '" + text + "'");
        }
        String host = text.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]") && host.length() > 2) {
            host = host.substring(1, host.length() - 1);
        } else if (host.contains(":")) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "write an IPv6 address in brackets, [ADDRESS]:PORT, got '" + text + "'");
        }
        String port = text.substring(colon + 1);
        if (!port.chars().allMatch(Character::isDigit) || port.length() > 5) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "expected a port number after ':', got '" + text + "'");
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
