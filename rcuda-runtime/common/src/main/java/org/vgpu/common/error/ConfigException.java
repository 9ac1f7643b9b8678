package org.vgpu.common.error;

/** A configuration or key file that is missing, unreadable or wrong. */
public final class ConfigException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    /** What is wrong with the file. */
    public enum Code {
        /** The file does not exist. */
        MISSING,
        /** The file exists but cannot be read or written. */
        UNREADABLE,
        /** The file's content or permissions are not what vgpu needs. */
        INVALID
    }

    private final Code code;

    public ConfigException(Code code, String message) {
        this(code, message, null);
    }

    public ConfigException(Code code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    public Code code() {
        return code;
    }

    @Override
    public String codeName() {
        return "CONFIG_" + code.name();
    }
}
