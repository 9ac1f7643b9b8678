package org.vgpu.tracker.slurm;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

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

    /**
     * Slurm's time formats: {@code MM}, {@code MM:SS}, {@code HH:MM:SS}, {@code D-HH}, {@code D-HH:MM},
     * {@code D-HH:MM:SS}.
     */
    private static Duration duration(String source, String key, String text) {
        Matcher matcher = TIME.matcher(text);
        if (!matcher.matches()) {
            throw SlurmException.badOutput(source, key + "=" + text + " is not a time [D-]HH:MM:SS");
        }
        boolean withDays = matcher.group(1) != null;
        long[] fields = Stream.of(matcher.group(2), matcher.group(3), matcher.group(4))
                .filter(Objects::nonNull)
                .mapToLong(Long::parseLong)
                .toArray();
        // Units of the fields, last field first: with days they count hours first, without minutes first.
        Duration[][] units = withDays
                ? new Duration[][] {
                    {Duration.ofHours(1)},
                    {Duration.ofHours(1), Duration.ofMinutes(1)},
                    {Duration.ofHours(1), Duration.ofMinutes(1), Duration.ofSeconds(1)}
                }
                : new Duration[][] {
                    {Duration.ofMinutes(1)},
                    {Duration.ofMinutes(1), Duration.ofSeconds(1)},
                    {Duration.ofHours(1), Duration.ofMinutes(1), Duration.ofSeconds(1)}
                };
        Duration total = Duration.ofDays(group(matcher, 1));
        for (int i = 0; i < fields.length; i++) {
            total = total.plus(units[fields.length - 1][i].multipliedBy(fields[i]));
        }
        return total;
    }

    private static long group(Matcher matcher, int group) {
        return matcher.group(group) == null ? 0 : Long.parseLong(matcher.group(group));
    }
}
