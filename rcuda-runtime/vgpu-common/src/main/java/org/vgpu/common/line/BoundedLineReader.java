package org.vgpu.common.line;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * Reads {@code \n}-terminated lines ({@code \r\n} too) but keeps at most {@code maxBytes} of each,
 * discarding the rest of a longer line: a peer that never sends a newline costs bounded memory,
 * unlike {@link java.io.BufferedReader#readLine()}.
 */
public final class BoundedLineReader {
    /** One line; {@code truncated} when bytes beyond the limit were discarded. Bytes that are not UTF-8 read as U+FFFD. */
    public record Line(String text, boolean truncated) {}

    private final InputStream in;
    private final int maxBytes;

    public BoundedLineReader(InputStream in, int maxBytes) {
        this.in = new BufferedInputStream(in);
        this.maxBytes = maxBytes;
    }

    /** The next line, or null at the end of the stream; a last line without newline is still a line. */
    public Line readLine() throws IOException {
        // One byte more than the limit is kept, so a full-length line ending in \r\n is not taken for a cut one.
        ByteArrayOutputStream kept = new ByteArrayOutputStream();
        boolean truncated = false;
        boolean sawAnything = false;
        int next;
        while ((next = in.read()) != -1) {
            sawAnything = true;
            if (next == '\n') {
                break;
            }
            if (kept.size() <= maxBytes) {
                kept.write(next);
            } else {
                truncated = true;
            }
        }
        if (!sawAnything) {
            return null;
        }
        byte[] bytes = kept.toByteArray();
        int length =
                !truncated && bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
        if (length > maxBytes) {
            truncated = true;
            length = maxBytes;
        }
        return new Line(new String(bytes, 0, length, StandardCharsets.UTF_8), truncated);
    }
}
