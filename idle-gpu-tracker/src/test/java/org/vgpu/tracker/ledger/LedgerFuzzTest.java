package org.vgpu.tracker.ledger;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fuzz targets for the ledger reader (docs/fuzzing.md). The first byte of an input says whether its lines get a valid
 * CRC (odd) or are taken as they are (even): without it the fuzzer would almost never get past the CRC check to the
 * values. A line may be refused only with IllegalArgumentException (which Ledger turns into FILE:LINE), and a line that
 * parses must round-trip: written again as Ledger writes its record, it parses to the same record, and writing that
 * gives the same line. A ledger file may be refused only with LedgerException, and one that opens must open again to
 * the same records after its rewrite.
 */
class LedgerFuzzTest {
    @TempDir
    Path dir;

    @FuzzTest(maxDuration = "1m")
    void line(byte[] input) {
        for (String line : lines(input).split("\n", -1)) {
            LedgerLines.Entry entry;
            try {
                entry = LedgerLines.parse(line);
            } catch (IllegalArgumentException refused) {
                // the product's refusal: Ledger reports it with FILE:LINE
                continue;
            }
            String written = written(entry);
            LedgerLines.Entry again = LedgerLines.parse(written);
            if (!again.equals(entry)) {
                throw new AssertionError(
                        "'" + line + "' read " + entry + ", written as '" + written + "' reads " + again);
            }
            if (!written(again).equals(written)) {
                throw new AssertionError("'" + written + "' is written again as '" + written(again) + "'");
            }
        }
    }

    /** The line Ledger writes for the record {@code entry}. */
    private static String written(LedgerLines.Entry entry) {
        return switch (entry) {
            case LedgerLines.Entry.Keep keep -> LedgerLines.assembly(keep.assembly());
            case LedgerLines.Entry.Forget forget -> LedgerLines.forget(forget.job(), forget.why());
            case LedgerLines.Entry.Step step -> LedgerLines.migration(step.migration());
            case LedgerLines.Entry.Outcome outcome -> LedgerLines.outcome(outcome.outcome());
            case LedgerLines.Entry.LastMigrationId last -> LedgerLines.lastMigrationId(last.id());
            case LedgerLines.Entry.Certificate certificate ->
                LedgerLines.certificate(certificate.workerId(), certificate.pin());
        };
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
        List<Assembly> assemblies = List.copyOf(first.assemblies());
        List<Migration> migrations = List.copyOf(first.migrations());
        long nextMigrationId = first.nextMigrationId();
        first.close();
        try (Ledger again = Ledger.open(file)) {
            if (!List.copyOf(again.assemblies()).equals(assemblies)
                    || !List.copyOf(again.migrations()).equals(migrations)
                    || again.nextMigrationId() != nextMigrationId) {
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
