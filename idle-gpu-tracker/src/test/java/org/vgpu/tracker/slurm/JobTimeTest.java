package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;

import org.junit.jupiter.api.Test;

class JobTimeTest {
    private static JobTime parse(String runTime, String timeLimit) {
        return JobTime.parse("scontrol show job 7", runTime, timeLimit);
    }

    @Test
    void slurmsTimeFormatsAreRead() {
        assertEquals(new JobTime(Duration.ofSeconds(13), Optional.empty()), parse("00:00:13", "UNLIMITED"));
        assertEquals(
                new JobTime(Duration.ofHours(26).plusMinutes(3).plusSeconds(4), Optional.of(Duration.ofMinutes(90))),
                parse("1-02:03:04", "01:30:00"));
        assertEquals(
                Optional.of(Duration.ofMinutes(5).plusSeconds(30)),
                parse("0:00:00", "05:30").timeLimit());
        assertEquals(Optional.of(Duration.ofMinutes(45)), parse("0:00:00", "45").timeLimit());
        assertEquals(
                Optional.of(Duration.ofDays(2).plusHours(3)),
                parse("0:00:00", "2-03").timeLimit());
        assertEquals(
                Optional.of(Duration.ofDays(2).plusHours(3).plusMinutes(4)),
                parse("0:00:00", "2-03:04").timeLimit());
        assertEquals(Optional.empty(), parse("0:00:00", "Partition_Limit").timeLimit());
    }

    @Test
    void aMalformedTimeNamesTheCommandAndTheField() {
        SlurmException refused = assertThrows(SlurmException.class, () -> parse("soon", "UNLIMITED"));
        assertTrue(refused.getMessage().contains("scontrol show job 7"), refused.getMessage());
        assertTrue(refused.getMessage().contains("RunTime=soon is not a time [D-]HH:MM:SS"), refused.getMessage());
    }
}
