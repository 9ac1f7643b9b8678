package org.vgpu.simulator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

import org.vgpu.simulator.result.JobOutcome;

class JobOutcomeTest {
    @Test
    void waitSlowdownAndBoundedSlowdownFollowFromTheTimes() {
        // submitted at 100, started at 160, ran 220 s where natively it needs 200 s
        JobOutcome outcome = new JobOutcome("7", 100, 160, 380, 2, 1, 1, 50, 200, false);
        assertEquals(60, outcome.waitSeconds(), 1e-9);
        assertEquals(0.10, outcome.slowdown(), 1e-9);
        assertEquals(280.0 / 200, outcome.boundedSlowdown(), 1e-9);
    }

    @Test
    void aShortJobIsBoundedByTenSeconds() {
        JobOutcome outcome = new JobOutcome("8", 0, 30, 31, 1, 0, 0, 0, 1, false);
        assertEquals(3.1, outcome.boundedSlowdown(), 1e-9);
    }
}
