package org.vgpu.tracker;

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

/**
 * slurm-spank-bridge/contract/transcripts.txt, the golden request/reply pairs of the tracker line
 * protocol, by scenario (the file says its format).
 */
record Transcripts(Map<String, List<Transcripts.Exchange>> scenarios) {
    static final Path FILE = Path.of("..", "slurm-spank-bridge", "contract", "transcripts.txt");
    private static final String TOKEN = "{token}";

    /** One request and the reply lines the tracker gives it. */
    record Exchange(int line, String request, List<String> replies) {}

    static Transcripts read() {
        List<String> lines;
        try {
            lines = Files.readAllLines(FILE);
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
                default -> throw new IllegalArgumentException(FILE + ":" + (i + 1) + ": unknown line '" + line + "'");
            }
        }
        return new Transcripts(scenarios);
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
