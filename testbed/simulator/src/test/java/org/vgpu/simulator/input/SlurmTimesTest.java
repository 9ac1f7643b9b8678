package org.vgpu.simulator.input;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.OptionalLong;

import org.junit.jupiter.api.Test;

class SlurmTimesTest {
    @Test
    void everyTimeLimitFormatOfSlurmIsRead() {
        assertEquals(OptionalLong.of(300), SlurmTimes.limitSeconds("5"));
        assertEquals(OptionalLong.of(330), SlurmTimes.limitSeconds("5:30"));
        assertEquals(OptionalLong.of(3_723), SlurmTimes.limitSeconds("01:02:03"));
        assertEquals(OptionalLong.of(2 * 86_400 + 3 * 3_600), SlurmTimes.limitSeconds("2-3"));
        assertEquals(OptionalLong.of(2 * 86_400 + 3 * 3_600 + 4 * 60), SlurmTimes.limitSeconds("2-03:04"));
        assertEquals(OptionalLong.of(2 * 86_400 + 3 * 3_600 + 4 * 60 + 5), SlurmTimes.limitSeconds("2-03:04:05"));
        assertEquals(OptionalLong.empty(), SlurmTimes.limitSeconds("UNLIMITED"));
        assertEquals(OptionalLong.empty(), SlurmTimes.limitSeconds("Partition_Limit"));
    }

    @Test
    void aLimitInNoFormatOfSlurmIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> SlurmTimes.limitSeconds("1h"));
        assertThrows(IllegalArgumentException.class, () -> SlurmTimes.limitSeconds("1:2:3:4"));
        assertThrows(IllegalArgumentException.class, () -> SlurmTimes.limitSeconds(""));
    }

    @Test
    void aLimitCoveringARunIsItRoundedUpToAWholeMinute() {
        assertEquals(60, SlurmTimes.limitCovering(0));
        assertEquals(60, SlurmTimes.limitCovering(60));
        assertEquals(120, SlurmTimes.limitCovering(61));
    }
}
