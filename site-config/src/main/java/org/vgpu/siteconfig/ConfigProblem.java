package org.vgpu.siteconfig;

import java.nio.file.Path;
import java.util.Objects;

/**
 * One thing wrong with a site configuration file, where it is and what is expected instead.
 *
 * @param line 1-based line number; 0 when the problem concerns the whole file (unreadable, a
 *             required section missing)
 */
public record ConfigProblem(Path file, int line, String message) {
    public ConfigProblem {
        Objects.requireNonNull(file, "file");
        Objects.requireNonNull(message, "message");
        if (line < 0) {
            throw new IllegalArgumentException("line must be >= 0, got " + line);
        }
    }

    /** {@code FILE:LINE: message}, the form compilers use, so editors can jump to it. */
    @Override
    public String toString() {
        return line == 0 ? file + ": " + message : file + ":" + line + ": " + message;
    }
}
