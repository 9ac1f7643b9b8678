package org.vgpu.bench.migration;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The blocked section's goal: 0.1 s plus the live bytes at 90 % of the bulk rate measured in the same run. */
class BlockedSectionTest {
    private static final long GIB = 1L << 30;

    @Test
    void aMoveWithinTheFixedCostPlusTheBytesAtNinetyPercentOfTheRateMeetsTheGoal() {
        // 8 GiB at 0.9 x 10 GB/s = 0.954 s, plus 0.1 s: 1.054 s
        String line = BlockedSection.goalLine(1.0, 8 * GIB, 10e9, 256L << 20);
        assertTrue(line.contains("= 1.054 s: met"), line);
        assertTrue(line.contains("(0.95 of the goal)"), line);
    }

    @Test
    void aMoveSlowerThanTheGoalSaysSo() {
        String line = BlockedSection.goalLine(1.88, 8 * GIB, 5e9, 256L << 20);
        // 8 GiB at 0.9 x 5 GB/s = 1.909 s, plus 0.1 s: 2.009 s; 1.88 s meets it
        assertTrue(line.contains("= 2.009 s: met"), line);
        String slower = BlockedSection.goalLine(2.5, 8 * GIB, 5e9, 256L << 20);
        assertTrue(slower.contains("= 2.009 s: NOT met"), slower);
        assertTrue(slower.contains("5.00 GB/s"), slower);
    }
}
