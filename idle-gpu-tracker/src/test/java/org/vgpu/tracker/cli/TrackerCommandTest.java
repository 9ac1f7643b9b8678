package org.vgpu.tracker.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.security.SiteKey;
import org.vgpu.siteconfig.cli.TrackerOptions;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.LedgerLines;

/** {@code vgpu tracker} as an admin starts it, up to where it would ask Slurm. */
class TrackerCommandTest {
    @TempDir
    Path dir;

    /**
     * A ledger line with a right CRC and a wrong value (here a worker id that is a shell command, which
     * the tracker used to fail on while rewriting the ledger, with a bare IllegalArgumentException) ends the
     * command with exit 1 and FILE:LINE, what was expected and what was found; the ledger is left as it was.
     */
    @Test
    void aLedgerLineWithABadValueEndsTheTrackerWithFileLineAndLeavesTheLedgerAlone() throws IOException {
        Path key = dir.resolve("site.key");
        SiteKey.generate().writeNewFile(key);
        Path config = Files.writeString(dir.resolve("vgpu.conf"), """
                [cluster]
                name = test
                tracker = 127.0.0.1:7400
                token_key_file = %s
                lend_partition = lend
                [node n1]
                gpus = 1
                gpu_memory = 16GiB
                vgpus = 1
                lender_port = 7500
                """.formatted(key));
        Path ledger = dir.resolve("tracker.ledger");
        String kept = LedgerLines.assembly(new Assembly(
                6, "alice", "n1", 1, 1, Assembly.Phase.SECURING, Instant.EPOCH, Optional.empty(), List.of()));
        byte[] before = (kept + "\n"
                        + sealed("assembly job=7 user=alice node=n1 vgpus=2 local=1 phase=securing"
                                + " planned=1 lend=1/n2/43/3/10.1.0.2:7500/$(id)")
                        + "\n")
                .getBytes(StandardCharsets.US_ASCII);
        Files.write(ledger, before);
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int status = SubcommandRunner.run(
                new TrackerCommand(),
                new String[] {
                    "--config", config.toString(),
                    "--ledger", ledger.toString(),
                    // Kept output, so stderr holds the ledger's line alone (discarding it adds a warning first).
                    "--holder-output", dir.resolve("holder-%j.out").toString()
                },
                new PrintStream(new ByteArrayOutputStream(), true),
                new PrintStream(err, true, StandardCharsets.UTF_8));

        assertEquals(1, status);
        assertEquals(
                "vgpu tracker: " + ledger + ":2: unreadable ledger record: lend '1/n2/43/3/10.1.0.2:7500/$(id)': worker"
                        + " id: expected 1 to 128 of A-Z a-z 0-9 . _ @ + -, found '$(id)'; the tracker will not start"
                        + " without knowing every lend. Repair the line, or move the file aside to start empty (holder"
                        + " jobs the tracker then does not know are cancelled)\n",
                err.toString(StandardCharsets.UTF_8));
        assertArrayEquals(before, Files.readAllBytes(ledger), "nothing rewritten, nothing lost");
    }

    /** One default for --config everywhere: the tracker reads the same file as the admin commands without it. */
    @Test
    void withoutConfigTheTrackerReadsTheSameDefaultConfigurationAsTheAdminCommands() {
        assumeFalse(Files.exists(Path.of(TrackerOptions.DEFAULT_CONFIG)), "this machine has a site configuration");
        ByteArrayOutputStream err = new ByteArrayOutputStream();

        int status = SubcommandRunner.run(
                new TrackerCommand(),
                new String[] {"--ledger", dir.resolve("tracker.ledger").toString()},
                new PrintStream(new ByteArrayOutputStream(), true),
                new PrintStream(err, true, StandardCharsets.UTF_8));

        assertEquals(1, status, err.toString(StandardCharsets.UTF_8));
        assertTrue(
                err.toString(StandardCharsets.UTF_8).contains(TrackerOptions.DEFAULT_CONFIG + ": no such file"),
                err.toString(StandardCharsets.UTF_8));
        assertTrue(
                new TrackerCommand()
                        .options()
                        .getOption("config")
                        .getDescription()
                        .contains("default " + TrackerOptions.DEFAULT_CONFIG),
                "--help names the default");
    }

    /** A line with a valid CRC, so the reader gets past it to the values. */
    private static String sealed(String body) {
        CRC32C crc = new CRC32C();
        crc.update(body.getBytes(StandardCharsets.US_ASCII));
        return body + " crc=" + HexFormat.of().toHexDigits((int) crc.getValue());
    }
}
