package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.tracker.server.TrackerProtocol;

/**
 * slurm-spank-bridge/contract/transcripts.txt, the golden request/reply pairs of the tracker line
 * protocol, by scenario (the file says its format), or admin-transcripts.txt beside it, those of the
 * admins' requests in the same format.
 */
public record Transcripts(Path file, Map<String, List<Transcripts.Exchange>> scenarios) {
    public static final Path FILE = Path.of("..", "slurm-spank-bridge", "contract", "transcripts.txt");
    public static final Path ADMIN_FILE = FILE.resolveSibling("admin-transcripts.txt");
    private static final String TOKEN = "{token}";

    /** One request and the reply lines the tracker gives it. */
    public record Exchange(int line, String request, List<String> replies) {}

    static Transcripts read() {
        return read(FILE);
    }

    /** A file of this format: the admins' requests and the migration agent's channel have transcripts of their own. */
    public static Transcripts read(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Map<String, List<Exchange>> scenarios = new LinkedHashMap<>();
        List<Exchange> current = null;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            String rest = line.length() > 2 ? line.substring(2) : "";
            switch (line.isEmpty() ? '#' : line.charAt(0)) {
                case '#', '=' -> {
                    // comments; the exported environment is the bridge's business
                }
                case '@' -> {
                    current = new ArrayList<>();
                    scenarios.put(rest, current);
                }
                case '>' -> current.add(new Exchange(i + 1, rest, new ArrayList<>()));
                case '<' -> current.getLast().replies().add(rest);
                default -> throw new IllegalArgumentException(file + ":" + (i + 1) + ": unknown line '" + line + "'");
            }
        }
        return new Transcripts(file, scenarios);
    }

    /** Asserts that {@code protocol} answers the exchanges of {@code scenario} word for word, in their order. */
    void assertAnswered(TrackerProtocol protocol, String scenario) {
        List<Exchange> exchanges = scenarios.getOrDefault(scenario, List.of());
        assertFalse(exchanges.isEmpty(), file + " has no scenario " + scenario);
        for (Exchange exchange : exchanges) {
            List<String> replies = protocol.answer(new BoundedLineReader.Line(exchange.request(), false), "127.0.0.1");
            String where = file + ":" + exchange.line() + " '" + exchange.request() + "' got " + replies;
            assertEquals(exchange.replies().size(), replies.size(), where);
            for (int i = 0; i < replies.size(); i++) {
                assertTrue(matches(exchange.replies().get(i), replies.get(i)), where);
            }
        }
    }

    /** Whether the tracker's reply is the expected one, where {@code {token}} stands for any session token. */
    static boolean matches(String expected, String reply) {
        StringBuilder pattern = new StringBuilder();
        int from = 0;
        for (int at = expected.indexOf(TOKEN); at >= 0; at = expected.indexOf(TOKEN, from)) {
            pattern.append(Pattern.quote(expected.substring(from, at)))
                    .append(BridgeContract.TOKEN_CHAR_CLASS)
                    .append('+');
            from = at + TOKEN.length();
        }
        pattern.append(Pattern.quote(expected.substring(from)));
        return reply.matches(pattern.toString());
    }
}
