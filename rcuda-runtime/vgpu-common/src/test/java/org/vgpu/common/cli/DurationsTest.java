package org.vgpu.common.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DurationsTest {
    @Test
    void durationsTakeTheirUnit() {
        assertEquals(Duration.ofMillis(500), Durations.parse("500ms"));
        assertEquals(Duration.ofSeconds(30), Durations.parse("30s"));
        assertEquals(Duration.ofMinutes(5), Durations.parse("5 m"));
        assertEquals(Duration.ofHours(2), Durations.parse("2h"));
        assertEquals(Duration.ofDays(1), Durations.parse("1d"));
        assertEquals(Duration.ZERO, Durations.parse("0s"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"30", "s", "-5s", "1.5s", "30 seconds", "99999999999999999999s"})
    void badDurationsAreRejected(String value) {
        assertThrows(IllegalArgumentException.class, () -> Durations.parse(value));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "abc", "0", "-5m", "5 min", "m"})
    void aValueWithoutAWholeNumberAndAUnitSaysWhatIsExpected(String value) {
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class, () -> Durations.parse(value));
        assertEquals(
                "'" + value + "' is not a duration; expected a whole number with a unit ms, s, m, h or d, e.g. 30s",
                error.getMessage());
    }

    @Test
    void tooLongIsSaidSo() {
        IllegalArgumentException error =
                assertThrows(IllegalArgumentException.class, () -> Durations.parse("99999999999999999999d"));
        assertEquals("'99999999999999999999d' is too long a duration", error.getMessage());
    }
}
