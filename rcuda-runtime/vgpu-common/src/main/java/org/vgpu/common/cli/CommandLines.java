package org.vgpu.common.cli;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.line.LineText;

/** Option-value helpers shared by subcommands, so a bad value reads the same everywhere. */
public final class CommandLines {
    private CommandLines() {}

    /** An integer option's value, or {@code fallback}; a bad or too small number is a usage error. */
    public static int intValue(CommandLine line, String option, int fallback, int min) throws ParseException {
        String value = line.getOptionValue(option);
        if (value == null) {
            return fallback;
        }
        int parsed;
        try {
            parsed = Integer.parseInt(value.strip());
        } catch (NumberFormatException e) {
            throw new ParseException("--" + option + " needs an integer, got '" + value + "'");
        }
        if (parsed < min) {
            throw new ParseException("--" + option + " must be >= " + min + ", got " + parsed);
        }
        return parsed;
    }

    /** An option's value, or {@code fallback}; it must be one of {@code choices}. */
    public static String choice(CommandLine line, String option, String fallback, List<String> choices)
            throws ParseException {
        String value = line.getOptionValue(option, fallback);
        if (!choices.contains(value)) {
            throw new ParseException("--" + option + " must be one of " + choices + ", got '" + value + "'");
        }
        return value;
    }

    /**
     * The items of an option given as comma-separated lists, as often as the option is given ({@code --user a,b
     * --user c}: a, b, c), each stripped, in order; none where it is absent. An empty item ({@code a,,b}, or an
     * empty value) is a usage error: it would otherwise select nothing, or everything, without saying so.
     */
    public static List<String> items(CommandLine line, String option) throws ParseException {
        String[] values = line.getOptionValues(option);
        if (values == null) {
            return List.of();
        }
        List<String> items = new ArrayList<>();
        for (String value : values) {
            for (String item : value.split(",", -1)) {
                if (item.isBlank()) {
                    throw new ParseException("--" + option + " takes a comma-separated list, got an empty item in '"
                            + LineText.printable(value, 80) + "'");
                }
                items.add(item.strip());
            }
        }
        return List.copyOf(items);
    }

    /**
     * A comma-separated option's values, in the order of {@code choices}, or all of {@code choices}
     * where it is absent; each must be one of them and at least one given.
     */
    public static Set<String> choices(CommandLine line, String option, List<String> choices) throws ParseException {
        String value = line.getOptionValue(option);
        if (value == null) {
            return new LinkedHashSet<>(choices);
        }
        Set<String> given = new LinkedHashSet<>();
        for (String item : value.split(",", -1)) {
            String name = item.strip();
            if (!choices.contains(name)) {
                throw new ParseException("--" + option + " takes a comma-separated list of " + choices + ", got '"
                        + name + "' in '" + value + "'");
            }
            given.add(name);
        }
        Set<String> ordered = new LinkedHashSet<>(choices);
        ordered.retainAll(given);
        return ordered;
    }
}
