package org.vgpu.simulator.input;

import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Slurm's time stamps and time limits as sacct prints them. Time stamps are {@code YYYY-MM-DDTHH:MM:SS} in the
 * cluster's local time, without a zone: they are read as if in UTC, which keeps every difference right except
 * across a daylight-saving change.
 */
final class SlurmTimes {
    static final String STAMP_FORMAT = "a Slurm time stamp YYYY-MM-DDTHH:MM:SS";
    static final String LIMIT_FORMAT = "[days-]hours:minutes:seconds, minutes, minutes:seconds, days-hours,"
            + " days-hours:minutes, UNLIMITED or Partition_Limit";

    private static final Pattern DAYS = Pattern.compile("(\\d+)-(\\d+)(?::(\\d+))?(?::(\\d+))?");
    private static final Pattern CLOCK = Pattern.compile("(\\d+)(?::(\\d+))?(?::(\\d+))?");

    private SlurmTimes() {}

    /** Whether sacct says the event has not happened: a job that never started, or has not ended. */
    static boolean notYet(String stamp) {
        return stamp.equals("Unknown") || stamp.equals("None") || stamp.isEmpty();
    }

    /** Seconds since the epoch of a time stamp; a {@link DateTimeParseException} when it is none. */
    static long epochSecond(String stamp) {
        return LocalDateTime.parse(stamp).toEpochSecond(ZoneOffset.UTC);
    }

    /**
     * A time limit in seconds, empty for none ({@code UNLIMITED}, {@code Partition_Limit}, {@code INFINITE}); an
     * {@link IllegalArgumentException} when it is in no format Slurm has.
     */
    static OptionalLong limitSeconds(String limit) {
        if (limit.equals("UNLIMITED") || limit.equals("Partition_Limit") || limit.equals("INFINITE")) {
            return OptionalLong.empty();
        }
        Matcher days = DAYS.matcher(limit);
        if (days.matches()) {
            return OptionalLong.of(Long.parseLong(days.group(1)) * 86_400
                    + Long.parseLong(days.group(2)) * 3_600
                    + part(days.group(3)) * 60
                    + part(days.group(4)));
        }
        Matcher clock = CLOCK.matcher(limit);
        if (clock.matches()) {
            long first = Long.parseLong(clock.group(1));
            if (clock.group(2) == null) {
                return OptionalLong.of(first * 60);
            }
            if (clock.group(3) == null) {
                return OptionalLong.of(first * 60 + Long.parseLong(clock.group(2)));
            }
            return OptionalLong.of(
                    first * 3_600 + Long.parseLong(clock.group(2)) * 60 + Long.parseLong(clock.group(3)));
        }
        throw new IllegalArgumentException("time limit '" + limit + "' is in no format Slurm has");
    }

    /**
     * The time limit of a job whose input gives none it ran under: its run time rounded up to a whole minute (Slurm
     * limits are whole minutes), so backfill plans with nearly exact run times.
     */
    static long limitCovering(long runSeconds) {
        return Math.max(60, (runSeconds + 59) / 60 * 60);
    }

    private static long part(String digits) {
        return digits == null ? 0 : Long.parseLong(digits);
    }
}
