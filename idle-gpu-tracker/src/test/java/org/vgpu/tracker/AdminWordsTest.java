package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The admins' requests and their outcome words are written once, in slurm-spank-bridge/contract/grammar.conf: the
 * tracker's side (its protocol, its migration hook, the admin commands) and the client's (TrackerAdminClient) use the
 * generated BridgeContract, and hold none of them as a string literal of their own.
 */
class AdminWordsTest {
    /**
     * Literals that would write a contract word again: a request word and its space, as a request is built, and the
     * words that the client reads from a reply (outcome, state, keys).
     */
    private static final Set<String> CONTRACT_WORDS = Set.of(
            "migrate ",
            "drain ",
            "hook ",
            "pause",
            "resume",
            "ok",
            "error",
            "^ok ",
            "^error ",
            "claiming",
            "sent",
            "failed",
            "gave-up",
            "started",
            "state",
            "what",
            "blocked_ms",
            "bytes",
            "munge=",
            " munge=");

    private static final Pattern LITERAL = Pattern.compile("\"((?:[^\"\\\\\\n]|\\\\.)*)\"");
    private static final Path TRACKER = Path.of("src", "main", "java", "org", "vgpu", "tracker");

    @Test
    void neitherSideWritesAnAdminRequestOrOutcomeWordOfItsOwn() throws IOException {
        List<Path> sources = new ArrayList<>();
        for (String folder : List.of("server", "hook", "cli")) {
            try (Stream<Path> files = Files.list(TRACKER.resolve(folder))) {
                files.filter(file -> file.toString().endsWith(".java")).forEach(sources::add);
            }
        }
        // The client lives with the code every daemon shares, wherever that module's folder is.
        try (Stream<Path> files = Files.walk(Path.of(".."), 12)) {
            files.filter(file -> file.endsWith(Path.of("org", "vgpu", "common", "line", "TrackerAdminClient.java")))
                    .filter(file -> file.toString()
                            .contains("src" + file.getFileSystem().getSeparator() + "main"))
                    .forEach(sources::add);
        }
        assertTrue(
                sources.stream().anyMatch(file -> file.endsWith("TrackerAdminClient.java")),
                "the admin client was not found");
        List<String> found = new ArrayList<>();
        for (Path source : sources) {
            List<String> lines = Files.readAllLines(source);
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i).strip();
                // Comments, and a null check naming its parameter (a record component may be called state).
                if (line.startsWith("*")
                        || line.startsWith("/")
                        || line.startsWith("import ")
                        || line.startsWith("Objects.requireNonNull(")) {
                    continue;
                }
                Matcher literal = LITERAL.matcher(line);
                while (literal.find()) {
                    if (CONTRACT_WORDS.contains(literal.group(1))) {
                        found.add(source + ":" + (i + 1) + ": " + literal.group());
                    }
                }
            }
        }
        assertEquals(List.of(), found, "write these with org.vgpu.common.contract.BridgeContract");
    }
}
