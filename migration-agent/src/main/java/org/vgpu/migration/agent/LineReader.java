package org.vgpu.migration.agent;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;

/**
 * Lines from a channel, each at most {@code maxBytes} long: a longer line is reported as such
 * instead of being buffered without bound. Bytes that are not UTF-8 become U+FFFD, so they reach
 * the command parser as an unknown word rather than as an exception.
 */
final class LineReader {
    /** A line without its end; {@code tooLong} when it went past the limit (its text is then empty). */
    record Line(String text, boolean tooLong) {
    }

    private final ReadableByteChannel channel;
    private final int maxBytes;
    private final ByteBuffer buffer = ByteBuffer.allocate(4096).flip();

    LineReader(ReadableByteChannel channel, int maxBytes) {
        this.channel = channel;
        this.maxBytes = maxBytes;
    }

    /** The next line; null at the end of the stream (a last line without a line end counts as a line). */
    Line next() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        while (true) {
            if (!buffer.hasRemaining()) {
                buffer.clear();
                int read = channel.read(buffer);
                buffer.flip();
                if (read < 0) {
                    return line.size() == 0 ? null : decode(line);
                }
                continue;
            }
            byte b = buffer.get();
            if (b == '\n') {
                return decode(line);
            }
            if (line.size() == maxBytes) {
                return new Line("", true);
            }
            line.write(b);
        }
    }

    private static Line decode(ByteArrayOutputStream line) {
        byte[] bytes = line.toByteArray();
        int length = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
        return new Line(new String(bytes, 0, length, StandardCharsets.UTF_8), false);
    }
}
