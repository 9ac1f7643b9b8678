package org.vgpu.cli;

import java.util.List;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.ParseException;

/** Option-value helpers shared by subcommands, so a bad value reads the same everywhere. */
public final class CommandLines {
    private CommandLines() {
    }

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
    public static String choice(CommandLine line, String option, String fallback, List<String> choices) throws ParseException {
        String value = line.getOptionValue(option, fallback);
        if (!choices.contains(value)) {
            throw new ParseException("--" + option + " must be one of " + choices + ", got '" + value + "'");
        }
        return value;
    }
}
