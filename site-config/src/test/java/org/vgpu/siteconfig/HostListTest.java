package org.vgpu.siteconfig;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class HostListTest {
    @Test
    void aRangeKeepsTheZeroPaddingOfItsLowerBound() {
        List<String> names = HostList.expand("gpu[001-128]");

        assertEquals(128, names.size());
        assertEquals("gpu001", names.getFirst());
        assertEquals("gpu099", names.get(98));
        assertEquals("gpu128", names.getLast());
        assertEquals(List.of("n8", "n9", "n10", "n11"), HostList.expand("n[8-11]"));
        assertEquals(List.of("n098", "n099", "n100"), HostList.expand("n[098-100]"));
    }

    @Test
    void commaListsInsideAndOutsideBracketsAndSuffixesAreTakenAsSlurmTakesThem() {
        assertEquals(List.of("g1", "g3", "g5", "g6", "g7"), HostList.expand("g[1,3,5-7]"));
        assertEquals(List.of("a1", "b2", "b3", "c"), HostList.expand("a1,b[2-3],c"));
        assertEquals(List.of("r1-ib", "r2-ib"), HostList.expand("r[1-2]-ib"));
        assertEquals(List.of("rack1-n2-x", "rack1-n3-x"), HostList.expand("rack1-n[2-3]-x"));
        assertEquals(List.of("gpu1", "gpu3", "gpu4", "login-a"), HostList.expand("gpu[1,3-4],login-a"));
        assertEquals(List.of("single"), HostList.expand("single"));
        assertEquals(List.of("g7"), HostList.expand("g[7]"));
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "g[1-4|'[' without its ']'",
                "g1-4]|']' without its '['",
                "g1],g2|']' without its '['",
                "g]1[2]|']' without its '['",
                "g[]|'' is not a number or a range N-M of numbers (an empty one)",
                "g[1-]|'1-' is not a number or a range N-M of numbers",
                "g[-4]|'-4' is not a number",
                "g[a-c]|'a-c' is not a number",
                "g[1,,2]|'' is not a number",
                "g[5-3]|the range 5-3 runs backwards",
                "[1-4]|a range needs a name before its '['",
                "g[1-2]x[1-2]|one [...] per name",
                "g1,,g2|an empty name between commas",
                "g[1-2],|an empty name between commas"
            })
    void aMalformedRangeSaysWhatIsWrongAndWhatIsExpected(String expression, String wrong) {
        IllegalArgumentException refused =
                assertThrows(IllegalArgumentException.class, () -> HostList.expand(expression));

        assertTrue(refused.getMessage().startsWith("'" + expression + "' is not a node range: "), refused.getMessage());
        assertTrue(refused.getMessage().contains(wrong), refused.getMessage());
        assertTrue(
                refused.getMessage()
                        .endsWith("; expected NAME or NAME[RANGES] as in slurm.conf, e.g. gpu[001-128],"
                                + " gpu[1,3,5-8] or a1,b[2-3]"),
                refused.getMessage());
    }

    @Test
    void namesARangeMakesAreCheckedAsNames() {
        IllegalArgumentException refused =
                assertThrows(IllegalArgumentException.class, () -> HostList.expand("g[1-2]@x"));
        assertEquals(
                "in 'g[1-2]@x': 'g1@x' is not a valid name; expected letters, digits, '_', '.', '-' (starting with a"
                        + " letter or digit)",
                refused.getMessage());
    }

    /** Slurm's own bound on a range (its MAX_RANGE), here on the whole expression: memory stays bounded. */
    @Test
    void aListOfMoreNodesThanSlurmTakesInARangeIsRefusedBeforeItIsExpanded() {
        IllegalArgumentException refused =
                assertThrows(IllegalArgumentException.class, () -> HostList.expand("n[1-999999999999]"));
        assertEquals(
                "'n[1-999999999999]' stands for more than 65536 nodes, Slurm's own limit on a range (a typo?)",
                refused.getMessage());
        assertEquals(65_536, HostList.expand("n[1-65536]").size());
        assertThrows(IllegalArgumentException.class, () -> HostList.expand("n[1-65537]"));
        assertThrows(IllegalArgumentException.class, () -> HostList.expand("a[1-40000],b[1-40000]"));
    }

    @Test
    void compressWritesRunsAsRangesAndReadsBackToTheSameNames() {
        assertEquals("gpu[001-128]", HostList.compress(HostList.expand("gpu[001-128]")));
        assertEquals("n[1-11]", HostList.compress(HostList.expand("n[1-11]")));
        assertEquals("g[1,3,5-7]", HostList.compress(HostList.expand("g[1,3,5-7]")));
        assertEquals("n[5,06]", HostList.compress(List.of("n5", "n06")));
        assertEquals("a1,b[2-3],c", HostList.compress(List.of("a1", "b2", "b3", "c")));
        assertEquals("n,n[1-2]", HostList.compress(List.of("n", "n1", "n2")));
        assertEquals("n3", HostList.compress(List.of("n3")));
        for (String expression : List.of("x[0-9]", "x[098-101],y[1,5]", "a,b,c1")) {
            List<String> names = HostList.expand(expression);
            assertEquals(names, HostList.expand(HostList.compress(names)), expression);
        }
    }

    /** Reading stays linear: ten thousand nodes in one range, and written back as one. */
    @Test
    @Timeout(5)
    void tenThousandNodesExpandAndCompressAtOnce() {
        List<String> names = HostList.expand("gpu[00001-10000]");
        assertEquals(10_000, names.size());
        assertEquals("gpu[00001-10000]", HostList.compress(names));
        List<String> scattered = new ArrayList<>();
        IntStream.rangeClosed(1, 10_000).filter(i -> i % 2 == 0).forEach(i -> scattered.add("n" + i));
        assertEquals(scattered, HostList.expand(HostList.compress(scattered)));
    }
}
