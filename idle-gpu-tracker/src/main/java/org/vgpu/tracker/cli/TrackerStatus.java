package org.vgpu.tracker.cli;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.LedgerLines;

/**
 * The tracker's {@code status} reply, parsed: live assemblies (with the holders Slurm shows ended),
 * waiting jobs with their reasons, and recently ended assemblies.
 *
 * @param waiting and {@code ended}: each line's {@code key=value} fields in order; {@code reason}
 *                is the rest of the line and may hold spaces
 */
record TrackerStatus(
        List<Assembly> assemblies,
        Set<Long> lostHolders,
        List<Map<String, String>> waiting,
        List<Map<String, String>> ended) {

    /**
     * @throws IllegalArgumentException naming the line that is not in the tracker's status format
     */
    static TrackerStatus parse(List<String> lines) {
        List<Assembly> assemblies = new ArrayList<>();
        Set<Long> lost = new HashSet<>();
        List<Map<String, String>> waiting = new ArrayList<>();
        List<Map<String, String>> ended = new ArrayList<>();
        for (String line : lines) {
            String kind = line.contains(" ") ? line.substring(0, line.indexOf(' ')) : line;
            try {
                switch (kind) {
                    case "assembly" -> {
                        if (LedgerLines.parse(line) instanceof LedgerLines.Entry.Keep keep) {
                            assemblies.add(keep.assembly());
                        }
                    }
                    case "lost" -> {
                        for (String holder :
                                fields(line).getOrDefault("holders", "").split(",")) {
                            lost.add(Long.parseLong(holder));
                        }
                    }
                    case "waiting" -> waiting.add(fields(line));
                    case "ended" -> ended.add(fields(line));
                    case "ok" -> {
                        return new TrackerStatus(assemblies, lost, waiting, ended);
                    }
                    case "error" ->
                        throw new IllegalArgumentException("the tracker answered: "
                                + line.substring(kind.length()).strip());
                    default -> throw new IllegalArgumentException("unknown line kind '" + kind + "'");
                }
            } catch (RuntimeException e) {
                // The JDK's words for a bad number ("For input string") are not for a person.
                String why = e instanceof NumberFormatException ? "a number in it is not a number" : e.getMessage();
                throw new IllegalArgumentException("cannot read the tracker's status line '" + line + "': " + why, e);
            }
        }
        throw new IllegalArgumentException("the tracker's status ended without its 'ok' line");
    }

    /** {@code key=value} words after the first; {@code reason=} takes the rest of the line. */
    private static Map<String, String> fields(String line) {
        Map<String, String> fields = new LinkedHashMap<>();
        String rest = line.substring(line.indexOf(' ') + 1);
        while (!rest.isEmpty()) {
            if (rest.startsWith("reason=")) {
                fields.put("reason", rest.substring("reason=".length()));
                break;
            }
            int space = rest.indexOf(' ');
            String word = space < 0 ? rest : rest.substring(0, space);
            int equals = word.indexOf('=');
            if (equals < 1) {
                throw new IllegalArgumentException("'" + word + "' is not key=value");
            }
            fields.put(word.substring(0, equals), word.substring(equals + 1));
            rest = space < 0 ? "" : rest.substring(space + 1);
        }
        return fields;
    }
}
