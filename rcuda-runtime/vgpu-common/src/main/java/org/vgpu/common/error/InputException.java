package org.vgpu.common.error;

/**
 * A value a person gave (an option, an address, an argument) that vgpu cannot use; the launcher
 * reports it as bad usage (exit status 2).
 */
public final class InputException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    public InputException(String message) {
        super("BAD_INPUT", message, null);
    }
}
