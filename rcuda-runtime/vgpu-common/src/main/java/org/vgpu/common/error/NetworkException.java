package org.vgpu.common.error;

/**
 * A peer that cannot be reached, an address that cannot be listened on, a peer that broke its
 * protocol, or one that answered and refused the request.
 */
public final class NetworkException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    /** What went wrong on the network. */
    public enum Code {
        /** The peer could not be reached, or stopped answering. */
        UNREACHABLE,
        /** An address or socket file could not be listened on. */
        CANNOT_LISTEN,
        /** The peer answered outside its protocol. */
        PROTOCOL,
        /** The peer answered within its protocol, and refused the request (its reason in the message). */
        REFUSED
    }

    private final Code code;

    public NetworkException(Code code, String message) {
        this(code, message, null);
    }

    public NetworkException(Code code, String message, Throwable cause) {
        super("NETWORK", code, message, cause);
        this.code = code;
    }

    public Code code() {
        return code;
    }
}
