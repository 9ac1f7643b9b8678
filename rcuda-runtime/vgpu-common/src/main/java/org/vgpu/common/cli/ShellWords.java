package org.vgpu.common.cli;

import java.util.List;
import java.util.stream.Collectors;

/**
 * The one way vgpu writes values into a POSIX shell script (a holder job's {@code sbatch --wrap} command): each
 * value becomes one single-quoted word, in which the shell expands nothing ({@code $}, backquotes, {@code ;},
 * spaces, globs are all literal). A single quote inside a value ends the quoting, is written escaped and quoting
 * starts again: {@code it's} becomes {@code 'it'\''s'}. Never splice a value into a script any other way.
 */
public final class ShellWords {
    private ShellWords() {}

    /**
     * @throws IllegalArgumentException for a value with a NUL character, which no shell word can hold
     */
    public static String quote(String value) {
        if (value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("a shell word cannot hold a NUL character");
        }
        return "'" + value.replace("'", "'\\''") + "'";
    }

    /** A simple command: every word quoted, separated by spaces. */
    public static String command(List<String> words) {
        return words.stream().map(ShellWords::quote).collect(Collectors.joining(" "));
    }
}
