package org.vgpu.common.line;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import org.vgpu.common.line.BoundedLineReader.Line;

class BoundedLineReaderTest {
    @Test
    void readsLinesWithEitherEndingAndALastLineWithoutOne() throws IOException {
        BoundedLineReader reader = reader("one\ntwo\r\n\nlast");
        assertEquals(new Line("one", false), reader.readLine());
        assertEquals(new Line("two", false), reader.readLine());
        assertEquals(new Line("", false), reader.readLine());
        assertEquals(new Line("last", false), reader.readLine());
        assertNull(reader.readLine());
    }

    @Test
    void cutsALongLineAndResumesAtTheNextOne() throws IOException {
        BoundedLineReader reader = reader("x".repeat(100_000) + "\nnext\n");
        assertEquals(new Line("x".repeat(8), true), reader.readLine());
        assertEquals(new Line("next", false), reader.readLine());
        assertNull(reader.readLine());
    }

    @Test
    void aLineOfExactlyTheLimitIsWhole() throws IOException {
        assertEquals(new Line("12345678", false), reader("12345678\n").readLine());
        assertEquals(new Line("12345678", false), reader("12345678\r\n").readLine());
    }

    @Test
    void bytesThatAreNotUtf8BecomeReplacementCharacters() throws IOException {
        BoundedLineReader reader =
                new BoundedLineReader(new ByteArrayInputStream(new byte[] {'a', (byte) 0xff, '\n'}), 8);
        assertEquals(new Line("a\uFFFD", false), reader.readLine());
    }

    private static BoundedLineReader reader(String text) {
        return new BoundedLineReader(new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8)), 8);
    }
}
