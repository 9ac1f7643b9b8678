package org.vgpu.common.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Hostile values through a real {@code /bin/sh}: each comes back as exactly one argument, and nothing runs. */
class ShellWordsTest {
    @TempDir
    Path dir;

    @Test
    void everyHostileValueReachesTheCommandAsOneLiteralWord() throws IOException, InterruptedException {
        Path pwned = dir.resolve("pwned");
        List<String> hostile = List.of(
                "/usr/local/bin/vgpu; touch " + pwned,
                "$(touch " + pwned + ")",
                "`touch " + pwned + "`",
                "it's",
                "''",
                "'; touch " + pwned + "; '",
                "a b\tc\nd",
                "$HOME ${HOME} $1 $@ $* *",
                "\\' \\\\ \"",
                "-n",
                "",
                "é ✓ \u0001");
        List<String> words = new ArrayList<>(List.of("printf", "%s\\0"));
        words.addAll(hostile);

        Process shell = new ProcessBuilder("/bin/sh", "-c", ShellWords.command(words))
                .directory(dir.toFile())
                .start();
        byte[] out = shell.getInputStream().readAllBytes();
        assertEquals(0, shell.waitFor(), new String(shell.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));

        String printed = new String(out, StandardCharsets.UTF_8);
        assertEquals(hostile, List.of(printed.substring(0, printed.length() - 1).split("\0", -1)));
        assertFalse(Files.exists(pwned), "nothing in a value ran");
    }

    @Test
    void aSingleQuoteIsClosedEscapedAndReopened() {
        assertEquals("'it'\\''s'", ShellWords.quote("it's"));
        assertEquals("''", ShellWords.quote(""));
        assertThrows(IllegalArgumentException.class, () -> ShellWords.quote("a\0b"));
    }
}
