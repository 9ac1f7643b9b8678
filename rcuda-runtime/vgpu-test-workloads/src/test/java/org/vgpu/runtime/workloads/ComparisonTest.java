package org.vgpu.runtime.workloads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.workloads.Comparison.Tolerance;

class ComparisonTest {

    @Test
    void exactFloatsDifferInTheLastBitAndNameTheFirstIndex() {
        float one = 1.0f;
        Comparison c = Comparison.exact("c", new float[] {0, one, 2, 3}, new float[] {0, Math.nextUp(one), 2, 4});
        assertFalse(c.passed());
        assertEquals(4, c.compared());
        assertEquals(2, c.mismatches());
        assertEquals(1.0, c.maxAbsError());
        assertTrue(
                c.firstMismatch().startsWith("c[1]: expected 1.0 (0x3f800000), got 1.0000001 (0x3f800001)"),
                c.firstMismatch());
    }

    @Test
    void exactFloatsTellNegativeFromPositiveZero() {
        assertFalse(
                Comparison.exact("x", new float[] {0.0f}, new float[] {-0.0f}).passed());
        assertEquals(
                "exact",
                Comparison.exact("x", new float[] {-0.0f, 5}, new float[] {-0.0f, 5})
                        .summary());
    }

    @Test
    void exactLongsAreShownInHex() {
        Comparison c = Comparison.exact("payload", new long[] {255}, new long[] {256});
        assertEquals("payload[0]: expected 0xff, got 0x100", c.firstMismatch());
    }

    @Test
    void toleranceIsAbsolutePlusRelative() {
        Tolerance tolerance = new Tolerance(0.01, 0.1);
        assertTrue(Comparison.within("v", new double[] {100, 0}, new float[] {110, 0.01f}, tolerance)
                .passed());
        Comparison c = Comparison.within("v", new double[] {100, 0}, new float[] {110.5f, 0.02f}, tolerance);
        assertEquals(2, c.mismatches());
        assertEquals(10.5, c.maxAbsError(), 1e-9);
        assertTrue(c.firstMismatch().startsWith("v[0]"), c.firstMismatch());
    }

    @Test
    void nanIsAlwaysAMismatchWithInfiniteError() {
        Comparison c = Comparison.within("v", new double[] {1}, new float[] {Float.NaN}, new Tolerance(1e9, 1e9));
        assertFalse(c.passed());
        assertEquals(Double.POSITIVE_INFINITY, c.maxAbsError());
    }

    @Test
    void differentLengthsMismatch() {
        Comparison c = Comparison.exact("h", new int[] {1, 2, 3}, new int[] {1, 2});
        assertEquals(1, c.mismatches());
        assertTrue(c.firstMismatch().contains("3 values, got 2"), c.firstMismatch());
    }

    @Test
    void combinedComparisonsAddUpAndKeepTheFirstMismatch() {
        Comparison first = Comparison.exact("a", new int[] {1, 2}, new int[] {1, 2});
        Comparison second = Comparison.exact("b", new int[] {1}, new int[] {9});
        Comparison third = Comparison.exact("c", new int[] {1}, new int[] {7});
        Comparison all = first.and(second).and(third);
        assertEquals(4, all.compared());
        assertEquals(2, all.mismatches());
        assertEquals(8, all.maxAbsError());
        assertTrue(all.firstMismatch().startsWith("b[0]"), all.firstMismatch());
    }
}
