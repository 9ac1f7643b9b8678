package org.vgpu.common.agent;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * contract/agent-channel/generate.sh refuses a description it cannot turn into the channel's code, naming the file and
 * line, so a slip in messages.conf fails the build instead of generating a wrong codec.
 */
class AgentChannelGrammarTest {
    private static final Path GENERATOR = Path.of("contract", "agent-channel", "generate.sh");

    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "form poll_request = agent ping <job>|\"ping\" is no word of the channel or the bridge contract",
                "form poll_request = agent poll [<stat> ...] <job>|<job> follows an optional element",
                "form done_request = agent done <reason...> <job>|<reason...> is not the last element",
                "form done_request = agent done {outcome}|{outcome} names no choice",
                "form poll_request = agent poll [end=<seconds>|an unclosed [",
                "choice where = nowhere|\"nowhere\" is no form",
                "word agent = agent|agent defined twice",
                "limit hold_seconds = 20s|a limit is a decimal number",
                "verb poll = poll|expected word, limit, form or choice",
            })
    void aMalformedDescriptionFailsTheGenerationNamingItsLine(String line, String expected)
            throws IOException, InterruptedException {
        Path description = dir.resolve("messages.conf");
        Files.writeString(description, "word agent = agent\nword poll = poll\nword done = done\n" + line + "\n");
        ProcessBuilder generator = new ProcessBuilder(
                        "sh", GENERATOR.toString(), dir.resolve("out").toString())
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
        generator.environment().put("VGPU_AGENT_CHANNEL_DIR", dir.toString());
        Process generation = generator.start();
        String errors = new String(generation.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertNotEquals(0, generation.waitFor(), errors);
        assertTrue(errors.contains("messages.conf:4: ") && errors.contains(expected), errors);
    }
}
