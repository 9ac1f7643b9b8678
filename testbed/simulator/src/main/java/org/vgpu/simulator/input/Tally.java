package org.vgpu.simulator.input;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a reader kept and what it left out, counted by reason, and the assumptions it made: the summary an admin
 * reads to judge how much of the input the results stand for.
 */
final class Tally {
    private final String records;
    private int kept;
    private final Map<String, Integer> skipped = new LinkedHashMap<>();
    private final Map<String, Integer> adjusted = new LinkedHashMap<>();
    private final List<String> notes = new ArrayList<>();

    /** @param records what a record of the input is called, plural ("jobs", "pods") */
    Tally(String records) {
        this.records = records;
    }

    void keep() {
        kept++;
    }

    /** One record left out, and why (a phrase that follows "skipped N records"). */
    void skip(String reason) {
        skipped.merge(reason, 1, Integer::sum);
    }

    /** One kept record whose values the reader changed, and how (a phrase that follows "N records"). */
    void adjust(String how) {
        adjusted.merge(how, 1, Integer::sum);
    }

    void note(String assumption) {
        notes.add(assumption);
    }

    int kept() {
        return kept;
    }

    int skipped(String reason) {
        return skipped.getOrDefault(reason, 0);
    }

    List<String> lines() {
        List<String> lines = new ArrayList<>();
        lines.add(String.format(Locale.ROOT, "kept %,d %s", kept, records));
        skipped.forEach(
                (reason, count) -> lines.add(String.format(Locale.ROOT, "skipped %,d %s %s", count, records, reason)));
        adjusted.forEach((how, count) -> lines.add(String.format(Locale.ROOT, "%,d %s %s", count, records, how)));
        lines.addAll(notes);
        return lines;
    }
}
