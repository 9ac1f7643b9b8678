package org.vgpu.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * README's test command (the second of its two commands) is the one CI runs: {@code .ci/run}'s mvn command, word for
 * word, so what README promises is what CI checks.
 */
class ReadmeCommandsTest {
    private static final Path ROOT = Path.of("..", "..").toAbsolutePath().normalize();
    private static final Pattern FIRST_BLOCK = Pattern.compile("## Two commands.*?```\\n(.*?)```", Pattern.DOTALL);

    @Test
    void readmesSecondCommandIsTheOneCiRuns() throws IOException {
        List<String> commands = readmeCommands();
        List<String> ci = Files.readAllLines(ROOT.resolve(".ci/run")).stream()
                .map(String::strip)
                .filter(line -> line.startsWith("mvn "))
                .toList();
        assertEquals(1, ci.size(), ".ci/run runs one mvn command: " + ci);
        assertEquals(ci.get(0), commands.get(1), "README's test command and .ci/run's");
    }

    /** The lines of the code block in README's section "Two commands". */
    private static List<String> readmeCommands() throws IOException {
        Matcher block = FIRST_BLOCK.matcher(Files.readString(ROOT.resolve("README.md")));
        assertTrue(block.find(), "README has a section 'Two commands' with a code block");
        List<String> lines = block.group(1)
                .lines()
                .map(String::strip)
                .filter(line -> !line.isEmpty())
                .toList();
        assertEquals(2, lines.size(), "README's 'Two commands' block: " + lines);
        return lines;
    }
}
