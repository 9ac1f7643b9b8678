package org.vgpu.siteconfig;

import java.nio.file.Path;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The paths vgpu writes into systemd units (ExecStart) and Slurm files, where nothing can quote them: a
 * space splits an argument, {@code $} and {@code %} expand, {@code ;} and friends reach a shell. Such a path
 * is refused where it enters (the site configuration, the records made from it), never escaped later.
 * Shell scripts vgpu generates quote every word anyway ({@code org.vgpu.common.cli.ShellWords}).
 */
public final class PlainWords {
    /** What a plain path may contain, as messages say it. */
    public static final String PATH_CHARS = "letters, digits and . _ + - @ /";

    /** Far above any install path; keeps a megabyte of junk out of messages and rendered files. */
    public static final int MAX_PATH_LENGTH = 1024;

    private static final String PATH_PUNCTUATION = "._+-@/";

    private PlainWords() {}

    /**
     * The characters of {@code text} that a plain path may not contain, each once, in the order they appear,
     * as a message lists them ({@code ';', ' '}); empty when there are none.
     */
    public static String unplainCharacters(String text) {
        return text.codePoints()
                .filter(c -> !isPlain(c))
                .distinct()
                .mapToObj(PlainWords::shown)
                .collect(Collectors.joining(", "));
    }

    /** Why {@code value} cannot be written unquoted as a path: empty when it can. */
    public static Optional<String> pathProblem(String value) {
        if (value.length() > MAX_PATH_LENGTH) {
            return Optional.of("a path of " + value.length() + " characters is too long; expected at most "
                    + MAX_PATH_LENGTH + " " + PATH_CHARS);
        }
        String odd = unplainCharacters(value);
        return odd.isEmpty()
                ? Optional.empty()
                : Optional.of("'" + value + "' has a character vgpu does not write into shell commands or systemd"
                        + " units (" + odd + "); expected an absolute path of " + PATH_CHARS);
    }

    /**
     * @param key how the configuration names the setting, for the message
     * @throws IllegalArgumentException when {@code path} is not plain
     */
    static Path requirePlainPath(String key, Path path) {
        Optional<String> problem = pathProblem(path.toString());
        if (problem.isPresent()) {
            throw new IllegalArgumentException(key + ": " + problem.get());
        }
        return path;
    }

    private static boolean isPlain(int c) {
        return (c >= 'a' && c <= 'z')
                || (c >= 'A' && c <= 'Z')
                || (c >= '0' && c <= '9')
                || PATH_PUNCTUATION.indexOf(c) >= 0;
    }

    private static String shown(int c) {
        return c >= 0x20 && c < 0x7f ? "'" + Character.toString(c) + "'" : "U+%04X".formatted(c);
    }
}
