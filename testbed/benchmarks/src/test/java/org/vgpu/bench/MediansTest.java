package org.vgpu.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;

import org.junit.jupiter.api.Test;

class MediansTest {
    @Test
    void anOddCountHasItsMiddleValueAndAnEvenCountTheMeanOfItsTwoMiddleOnes() {
        assertEquals(3.0, Medians.of(new double[] {9, 3, 1}));
        assertEquals(2.5, Medians.of(new double[] {4, 1, 3, 2}));
        assertEquals(7.0, Medians.of(List.of(7.0)));
    }

    @Test
    void theValuesKeepTheirOrder() {
        double[] values = {3, 1, 2};
        Medians.of(values);
        assertArrayEquals(new double[] {3, 1, 2}, values);
    }

    @Test
    void noValuesHaveNoMedian() {
        assertThrows(IllegalArgumentException.class, () -> Medians.of(new double[0]));
    }
}
