package org.vgpu.tracker.ledger;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fuzz targets for the ledger reader (docs/fuzzing.md). The first byte of an input says whether its lines get a valid
 * CRC (odd) or are taken as they are (even): without it the fuzzer would almost never get past the CRC check to the
 * values. A line may be refused only with IllegalArgumentException (which Ledger turns into FILE:LINE); a ledger file
 * may be refused only with LedgerException, and one that opens must open again to the same records after its rewrite.
 */
class LedgerFuzzTest {
    @TempDir
    Path dir;

    @FuzzTest(maxDuration = "1m")
    void line(byte[] input) {
        for (String line : lines(input).split("\n", -1)) {
            try {
                LedgerLines.parse(line);
            } catch (IllegalArgumentException refused) {
                // the product's refusal: Ledger reports it with FILE:LINE
            }
        }
    }

    @FuzzTest(maxDuration = "1m")
    void file(byte[] input) throws IOException {
        Path file = dir.resolve("fuzz.ledger");
        Files.write(file, lines(input).getBytes(StandardCharsets.ISO_8859_1));
        Ledger first;
        try {
            first = Ledger.open(file);
        } catch (LedgerException refused) {
            return;
        }
        String assemblies = first.assemblies().toString();
        String migrations = first.migrations().toString();
        first.close();
        try (Ledger again = Ledger.open(file)) {
            if (!again.assemblies().toString().equals(assemblies)
                    || !again.migrations().toString().equals(migrations)) {
                throw new AssertionError("a ledger read back differently after its rewrite");
            }
        }
    }

    /** The input's lines (bytes as ISO-8859-1, so every byte value reaches the parser), sealed when asked for. */
    private static String lines(byte[] input) {
        if (input.length == 0) {
            return "";
        }
        String text = new String(input, 1, input.length - 1, StandardCharsets.ISO_8859_1);
        if ((input[0] & 1) == 0) {
            return text;
        }
        return text.lines().map(LedgerLines::sealed).collect(Collectors.joining("\n", "", "\n"));
    }
}
