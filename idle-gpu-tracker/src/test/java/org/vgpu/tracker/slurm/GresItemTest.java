package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class GresItemTest {
    private static List<GresItem> parse(String text) {
        return GresItem.parseList("test", text);
    }

    private static GresItem item(String name, int count, Integer... indices) {
        return new GresItem(name, Optional.empty(), count, List.of(indices));
    }

    @Test
    void readsEveryFormSlurmPrints() {
        assertEquals(List.of(item("gpu", 4), item("vgpu", 8)), parse("gpu:4,vgpu:8"));
        assertEquals(List.of(item("gpu", 3, 0, 1, 2)), parse("gpu:3(IDX:0-2)"));
        assertEquals(List.of(item("gpu", 3, 0, 2, 3)), parse("gpu:3(IDX:0,2-3)"));
        assertEquals(List.of(item("vgpu", 3), item("gpu", 1, 3)), parse("vgpu(CNT:3),gpu:1(IDX:3)"));
        assertEquals(List.of(new GresItem("gpu", Optional.of("a100"), 2, List.of())), parse("gpu:a100:2(S:0-1)"));
        assertEquals(List.of(item("gpu", 1), item("vgpu", 3)), parse("gres:gpu:1,gres:vgpu:3"));
        assertEquals(List.of(item("vgpu", 3)), parse("gres/vgpu:3"));
        assertEquals(List.of(item("gpu", 1)), parse("gpu"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "(null)", "N/A", "  "})
    void slurmsWaysOfSayingNothingAreEmpty(String text) {
        assertEquals(List.of(), parse(text));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "gpu:-1",
                "gpu:2(IDX:0)",
                "gpu:1(IDX:x)",
                "gpu:2(IDX:3-1)",
                "4:gpu",
                "gpu:1,,vgpu:2",
                "gpu:1(FOO:2)",
                "vgpu(CNT:many)"
            })
    void malformedEntriesAreRefused(String text) {
        assertThrows(SlurmException.class, () -> parse(text));
    }
}
