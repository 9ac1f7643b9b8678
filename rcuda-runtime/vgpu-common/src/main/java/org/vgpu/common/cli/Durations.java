package org.vgpu.common.cli;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one way vgpu writes a duration, in the site configuration and on the command line alike: a whole number with a
 * unit, {@code 500ms}, {@code 30s}, {@code 5m}, {@code 2h}, {@code 1d}.
 */
public final class Durations {
    private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");

    private Durations() {}

    /**
     * @throws IllegalArgumentException whose message says what was expected (no sign, no fraction, a unit)
     */
    public static Duration parse(String value) {
        Matcher matcher = DURATION.matcher(value);
        if (!matcher.matches()) {
            throw new IllegalArgumentException("'" + value + "' is not a duration; expected a whole number with"
                    + " a unit ms, s, m, h or d, e.g. 30s");
        }
        try {
            long amount = Long.parseLong(matcher.group(1));
            return switch (matcher.group(2)) {
                case "ms" -> Duration.ofMillis(amount);
                case "s" -> Duration.ofSeconds(amount);
                case "m" -> Duration.ofMinutes(amount);
                case "h" -> Duration.ofHours(amount);
                default -> Duration.ofDays(amount);
            };
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("'" + value + "' is too long a duration");
        }
    }
}
