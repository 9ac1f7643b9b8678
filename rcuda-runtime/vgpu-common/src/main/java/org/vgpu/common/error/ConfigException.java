package org.vgpu.common.error;

/**
 * Configuration that is missing, unreadable or wrong: the site's configuration file, a key or
 * certificate file, a daemon's settings, or the {@code VGPU_*} environment a job gets from the
 * SPANK bridge.
 */
public final class ConfigException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    /** What is wrong with the file. */
    public enum Code {
        /** The file does not exist, or a setting the configuration needs is not given. */
        MISSING,
        /** The file exists but cannot be read or written. */
        UNREADABLE,
        /** The file's content or permissions, or a setting's value, are not what vgpu needs. */
        INVALID
    }

    private final Code code;

    public ConfigException(Code code, String message) {
        this(code, message, null);
    }

    public ConfigException(Code code, String message, Throwable cause) {
        super("CONFIG", code, message, cause);
        this.code = code;
    }

    public Code code() {
        return code;
    }
}
