package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class JsonTest {
    @Test
    void readsEveryKindOfValue() {
        Object value = Json.parse("test", """
                {"s": "a\\/b\\"\\u00e9\\n", "n": -12.5e1, "i": 4294901759, "t": true, "f": false, "z": null,
                 "a": [1, [], {}], "o": {"k": "v"}}
                """);

        assertEquals(
                Map.of(
                        "s",
                        "a/b\"é\n",
                        "n",
                        new BigDecimal("-12.5e1"),
                        "i",
                        new BigDecimal("4294901759"),
                        "t",
                        true,
                        "f",
                        false,
                        "a",
                        List.of(BigDecimal.ONE, List.of(), Map.of()),
                        "o",
                        Map.of("k", "v")),
                withoutNull(value));
        assertTrue(((Map<?, ?>) value).containsKey("z"));
    }

    private static Map<?, ?> withoutNull(Object value) {
        Map<Object, Object> copy = new HashMap<>((Map<?, ?>) value);
        copy.remove("z");
        return copy;
    }

    @Test
    void keepsMemberOrder() {
        Map<?, ?> object = (Map<?, ?>) Json.parse("test", "{\"b\": 1, \"a\": 2, \"c\": 3}");

        assertEquals(List.of("b", "a", "c"), List.copyOf(object.keySet()));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "{",
                "{\"a\" 1}",
                "{\"a\": 1,}",
                "[1 2]",
                "[1,]",
                "\"open",
                "01",
                "1.",
                "-",
                "tru",
                "{a: 1}",
                "{\"a\": 1} x",
                "\"\\q\"",
                "\"\\u12\"",
                "\"tab\there\""
            })
    void malformedDocumentsAreRefused(String text) {
        SlurmException e = assertThrows(SlurmException.class, () -> Json.parse("squeue --json", text));
        assertTrue(e.getMessage().contains("cannot read the output of squeue --json: line 1 column "), e.getMessage());
        // The parser's own words (Jackson's) never reach an admin.
        for (String libraryWords : List.of("(code ", "Unrecognized", "was expecting", "Source:", "jackson")) {
            assertFalse(e.getMessage().contains(libraryWords), e.getMessage());
        }
    }

    @Test
    void aCutDocumentSaysItMayBeTruncated() {
        SlurmException e =
                assertThrows(SlurmException.class, () -> Json.parse("sinfo --json", "{\"nodes\": [{\"a\": 1"));

        assertTrue(e.getMessage().contains("truncated output?"), e.getMessage());
    }

    @Test
    void errorsPointAtLineAndColumn() {
        SlurmException e = assertThrows(SlurmException.class, () -> Json.parse("x", "{\n  \"a\": 1\n  \"b\": 2\n}"));

        assertEquals(
                "SLURM_BAD_OUTPUT: cannot read the output of x: line 3 column 3: expected ',' or '}' after a member,"
                        + " got '\"'",
                e.codeName() + ": " + e.getMessage());
    }

    @Test
    void deepNestingIsRefused() {
        String deep = "[".repeat(100) + "]".repeat(100);

        SlurmException e = assertThrows(SlurmException.class, () -> Json.parse("x", deep));
        assertTrue(e.getMessage().contains("nested deeper than 64 levels"), e.getMessage());
    }

    @Test
    void arraysAreUnmodifiable() {
        List<?> list = (List<?>) Json.parse("x", "[1]");

        assertThrows(UnsupportedOperationException.class, () -> list.remove(0));
        assertEquals(1, list.size());
    }
}
