package org.vgpu.tracker.slurm;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How long a job has run and may run ({@code RunTime} and {@code TimeLimit} of {@code scontrol show job}).
 *
 * @param timeLimit empty for {@code UNLIMITED} (or a limit Slurm does not state)
 */
public record JobTime(Duration ranFor, Optional<Duration> timeLimit) {
    /** {@code [days-]hours:minutes:seconds}, {@code minutes:seconds} or {@code minutes}, as Slurm prints times. */
    private static final Pattern TIME = Pattern.compile("(?:(\\d+)-)?(?:(\\d+):)?(?:(\\d+):)?(\\d+)");

    public JobTime {
        Objects.requireNonNull(ranFor, "ranFor");
        Objects.requireNonNull(timeLimit, "timeLimit");
    }

    /**
     * @param source names the output for an error
     * @throws SlurmException when a time is not in Slurm's format
     */
    static JobTime parse(String source, String runTime, String timeLimit) {
        Duration ran = duration(source, "RunTime", runTime);
        Optional<Duration> limit = switch (timeLimit) {
            case "UNLIMITED", "Partition_Limit", "NONE", "INVALID" -> Optional.empty();
            default -> Optional.of(duration(source, "TimeLimit", timeLimit));
        };
        return new JobTime(ran, limit);
    }

    private static Duration duration(String source, String key, String text) {
        Matcher matcher = TIME.matcher(text);
        if (!matcher.matches()) {
            throw SlurmException.badOutput(source, key + "=" + text + " is not a time [D-]HH:MM:SS");
        }
        long days = group(matcher, 1);
        if (matcher.group(2) == null) {
            // A bare number is minutes.
            return Duration.ofDays(days).plusMinutes(group(matcher, 4));
        }
        if (matcher.group(3) == null) {
            // Two fields: hours:minutes after days ("1-02:03"), else minutes:seconds.
            return matcher.group(1) != null
                    ? Duration.ofDays(days).plusHours(group(matcher, 2)).plusMinutes(group(matcher, 4))
                    : Duration.ofMinutes(group(matcher, 2)).plusSeconds(group(matcher, 4));
        }
        return Duration.ofDays(days)
                .plusHours(group(matcher, 2))
                .plusMinutes(group(matcher, 3))
                .plusSeconds(group(matcher, 4));
    }

    private static long group(Matcher matcher, int group) {
        return matcher.group(group) == null ? 0 : Long.parseLong(matcher.group(group));
    }
}
