package org.vgpu.tracker.ledger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vgpu.tracker.ledger.LedgerLines.sealed;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.CertificatePin;

class LedgerTest {
    private static final Instant PLANNED = Instant.parse("2026-11-21T12:00:00.123Z");

    @TempDir
    Path dir;

    @Test
    void everyChangeSurvivesReopeningAndForgottenJobsStayForgotten() {
        Path file = dir.resolve("state/tracker.ledger");
        Assembly secured = securing(42)
                .withLend(Lend.planned(1, "n2")
                        .withHolder(43)
                        .withGpu(3)
                        .withWorker(new Endpoint("10.1.0.2", 7501), "n2-d3-9f2c"));
        try (Ledger ledger = Ledger.open(file)) {
            ledger.record(securing(41));
            ledger.record(securing(42));
            ledger.record(secured);
            ledger.record(secured.releasedAt(PLANNED.plusSeconds(2)));
            ledger.forget(41, "done");
        }
        try (Ledger reopened = Ledger.open(file)) {
            assertEquals(List.of(secured.releasedAt(PLANNED.plusSeconds(2))), List.copyOf(reopened.assemblies()));
        }
    }

    @Test
    void aServingWorkersCertificateSurvivesReopeningAndCompactionAndAGoneWorkersDoesNot() {
        Path file = dir.resolve("state/tracker.ledger");
        CertificatePin pin = CertificatePin.ofDigest(new byte[] {
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
            30, 31, 32
        });
        Assembly served = securing(42)
                .withLend(Lend.planned(1, "n2")
                        .withHolder(43)
                        .withGpu(3)
                        .withWorker(new Endpoint("10.1.0.2", 7501), "n2-holder-43"));
        try (Ledger ledger = Ledger.open(file)) {
            ledger.record(served);
            ledger.recordCertificate("n2-holder-43", pin);
            ledger.recordCertificate("n3-holder-44", pin);
            assertEquals(Optional.of(pin), ledger.certificate("n2-holder-43"));
        }
        try (Ledger reopened = Ledger.open(file)) {
            assertEquals(Optional.of(pin), reopened.certificate("n2-holder-43"));
            assertEquals(Optional.empty(), reopened.certificate("n3-holder-44"), "no lend names that worker");
        }
    }

    @Test
    void theFileIsPrivateAndCompactedOnOpen() throws IOException {
        Path file = dir.resolve("tracker.ledger");
        try (Ledger ledger = Ledger.open(file)) {
            for (int i = 0; i < 10; i++) {
                ledger.record(securing(7));
            }
        }
        try (Ledger _ = Ledger.open(file)) {
            assertEquals(1, Files.readAllLines(file).size());
        }
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
    }

    @Test
    void aLastLineCutShortByACrashIsDropped() throws IOException {
        Path file = dir.resolve("tracker.ledger");
        try (Ledger ledger = Ledger.open(file)) {
            ledger.record(securing(7));
        }
        String torn = LedgerLines.assembly(securing(8));
        Files.writeString(file, torn.substring(0, torn.length() / 2), StandardOpenOption.APPEND);

        try (Ledger reopened = Ledger.open(file)) {
            assertEquals(
                    List.of(7L),
                    reopened.assemblies().stream().map(Assembly::job).toList());
        }
    }

    @Test
    void aDamagedLineStopsTheTrackerNamingFileAndLine() throws IOException {
        Path file = dir.resolve("tracker.ledger");
        try (Ledger ledger = Ledger.open(file)) {
            ledger.record(securing(7));
            ledger.record(securing(8));
        }
        List<String> lines = Files.readAllLines(file);
        Files.writeString(
                file,
                lines.get(0).replace("node=n1", "node=n9") + "\n" + lines.get(1) + "\n",
                StandardCharsets.US_ASCII);

        LedgerException refused = assertThrows(LedgerException.class, () -> Ledger.open(file));
        assertEquals("LEDGER_DAMAGED", refused.codeName());

        assertTrue(
                refused.getMessage().startsWith(file + ":1: unreadable ledger record: its CRC does not match"),
                refused.getMessage());
        assertEquals(2, Files.readAllLines(file).size(), "a ledger that cannot be read is left as it is");
    }

    /**
     * A line whose CRC is right but whose value is not (a port out of range, a worker id that is a
     * shell command, bytes that are not ASCII, a number beyond its field) stops the tracker with FILE:LINE, what was
     * expected and what was found, before anything is rewritten: the file stays as it was.
     */
    @Test
    void aSealedLineWithABadValueIsRefusedWithFileLineExpectedAndFoundAndTheFileIsLeftAlone() throws IOException {
        String lend = " lend=1/n2/43/3/10.1.0.2:7500/w-43";
        String good = "assembly job=7 user=alice node=n1 vgpus=2 local=1 phase=securing planned=1";
        for (String[] bad : List.of(
                new String[] {
                    good + " lend=1/n2/43/3/10.1.0.2:99999/w-43",
                    "lend '1/n2/43/3/10.1.0.2:99999/w-43': worker: expected HOST:PORT with a port in 0..65535,"
                            + " found '10.1.0.2:99999'"
                },
                new String[] {
                    good + " lend=1/n2/43/3/10.1.0.2:7500/$(id)",
                    "lend '1/n2/43/3/10.1.0.2:7500/$(id)': worker id: expected 1 to 128 of A-Z a-z 0-9 . _ @ + -,"
                            + " found '$(id)'"
                },
                new String[] {
                    good.replace("user=alice", "user=al\u00e9") + lend,
                    "expected ASCII text, found the byte 0xc3 at column 23"
                },
                new String[] {
                    good.replace("vgpus=2", "vgpus=4294967298") + lend,
                    "vgpus: expected a number in 1..2147483647, found 4294967298"
                },
                new String[] {
                    good.replace("job=7", "job=-7") + lend, "job: expected a number in 1..9223372036854775807, found -7"
                },
                new String[] {
                    "migration id=9 job=7 vgpu=1 node=n1 to=remote phase=claiming grant=- gpu=- worker=10.1.0.3:7500/`id`"
                            + " started=1 sent=- by=hook",
                    "worker id: expected 1 to 128 of A-Z a-z 0-9 . _ @ + -, found '`id`'"
                },
                new String[] {"forget job=7 why=$(reboot)", "reason: expected 1 to 128 of"})) {
            Path file = dir.resolve("tracker.ledger");
            try (Ledger ledger = Ledger.open(file)) {
                ledger.record(securing(6));
            }
            byte[] before = (Files.readString(file) + sealed(bad[0]) + "\n").getBytes(StandardCharsets.UTF_8);
            Files.write(file, before);

            LedgerException refused = assertThrows(LedgerException.class, () -> Ledger.open(file), bad[0]);

            assertEquals("LEDGER_DAMAGED", refused.codeName());
            assertTrue(
                    refused.getMessage().startsWith(file + ":2: unreadable ledger record: " + bad[1]),
                    bad[1] + " does not begin: " + refused.getMessage());
            assertArrayEquals(before, Files.readAllBytes(file), "nothing is rewritten or lost");
            Files.delete(file);
        }
    }

    @Test
    void recordsRefuseValuesTheReaderWouldRefuseSoTheWriterNeverWritesThem() {
        Endpoint worker = new Endpoint("10.1.0.2", 7500);
        for (Runnable make : List.<Runnable>of(
                () -> Lend.planned(1, "n2").withHolder(43).withGpu(3).withWorker(worker, "$(id)"),
                () -> Lend.planned(1, "n 2"),
                () -> Migration.intent(7, 42, 1, "n1", false, PLANNED, "by hook"),
                () -> new Migration.Worker(worker, "w;reboot"),
                () -> new Assembly(
                        0, "alice", "n1", 1, 1, Assembly.Phase.SECURING, PLANNED, Optional.empty(), List.of()),
                () -> new MigrationOutcome(7, 42, -1, MigrationOutcome.Result.OK, 0, 0, PLANNED))) {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, make::run);
            assertTrue(refused.getMessage().contains("expected"), refused.getMessage());
        }
    }

    @Test
    void linesRoundTripAndMalformedOnesAreRefusedWithTheReason() {
        Assembly released = securing(42)
                .withLend(Lend.planned(1, "n2")
                        .withHolder(43)
                        .withGpu(3)
                        .withWorker(new Endpoint("::1", 7501), "n2-d3-9f2c"))
                .releasedAt(PLANNED.plusSeconds(1));

        assertEquals(new LedgerLines.Entry.Keep(released), LedgerLines.parse(LedgerLines.assembly(released)));
        assertEquals(new LedgerLines.Entry.Forget(42, "gone"), LedgerLines.parse(LedgerLines.forget(42, "gone")));
        for (String[] bad : List.of(
                new String[] {"assembly job=1", "no crc="},
                new String[] {
                    sealed("assembly job=1 user=a node=n1 vgpus=1 local=1 phase=held planned=0"), "phase 'held'"
                },
                new String[] {
                    sealed("assembly job=x user=a node=n1 vgpus=1 local=1 phase=securing planned=0"), "'job=x' is not"
                },
                new String[] {sealed("assembly job=1 job=2"), "'job' appears twice"},
                new String[] {
                    sealed("assembly job=1 user=a node=n1 vgpus=2 local=1 phase=securing planned=0"), "do not make 2"
                },
                new String[] {sealed("launch job=1"), "unknown record 'launch'"},
                // found by LedgerFuzzTest#line: a line of spaces before its CRC raised ArrayIndexOutOfBoundsException
                new String[] {sealed("   "), "no record name at the start of the line"},
                new String[] {sealed(" forget job=1 why=x"), "no record name at the start of the line"},
                new String[] {
                    sealed("assembly job=1 user=a node=n1 vgpus=2 local=1 phase=securing planned=0 lend=1/n2/x/-/-/-"),
                    "lend '1/n2/x/-/-/-' has a VGPU, HOLDER or GPU that is not a number"
                },
                new String[] {
                    sealed("assembly job=1 user=a node=n1 vgpus=2 local=1 phase=securing planned=0"
                            + " lend=1/n2/43/3/n2/w"),
                    "lend '1/n2/43/3/n2/w': "
                })) {
            IllegalArgumentException refused =
                    assertThrows(IllegalArgumentException.class, () -> LedgerLines.parse(bad[0]));
            assertTrue(refused.getMessage().contains(bad[1]), bad[1] + " not in: " + refused.getMessage());
            assertFalse(refused.getMessage().contains("For input string"), refused.getMessage());
        }
    }

    @Test
    void namesThatCouldSplitAFieldAreNeverWritten() {
        // The record itself refuses the name, so no ledger line can be made of it.
        assertThrows(
                IllegalArgumentException.class,
                () -> LedgerLines.assembly(new Assembly(
                        1, "al ice", "n1", 1, 1, Assembly.Phase.SECURING, PLANNED, Optional.empty(), List.of())));
    }

    @Test
    void migrationsTheirOutcomesAndLendsThatMovedHomeSurviveAReopenAndACompaction() throws IOException {
        Path file = dir.resolve("tracker.ledger");
        Lend served =
                Lend.planned(1, "n2").withHolder(43).withGpu(3).withWorker(new Endpoint("10.0.0.2", 7500), "w-43");
        Assembly released = securing(42).withLend(served).releasedAt(PLANNED.plusSeconds(1));
        Migration intent = Migration.intent(7, 42, 1, "n1", false, PLANNED.plusSeconds(5), "hook");
        Migration sent = intent.withGrant(57).sentAt(0, PLANNED.plusSeconds(6));
        MigrationOutcome failed = new MigrationOutcome(6, 42, 1, MigrationOutcome.Result.FAILED, 0, 0, PLANNED);
        try (Ledger ledger = Ledger.open(file)) {
            ledger.record(released);
            ledger.finish(failed);
            ledger.record(intent);
            ledger.record(sent);
            assertEquals(8, ledger.nextMigrationId());
        }
        List<String> lines = Files.readAllLines(file);
        assertTrue(
                lines.contains(LedgerLines.migration(sent))
                        && lines.get(lines.size() - 1)
                                .startsWith(
                                        "migration id=7 job=42 vgpu=1 node=n1 to=home phase=sent grant=57 gpu=0 worker=- started="),
                lines.toString());
        Assembly home = released.withLend(served.movedHome("n1", 57, 0));
        try (Ledger reopened = Ledger.open(file)) {
            assertEquals(List.of(sent), List.copyOf(reopened.migrations()));
            assertEquals(Optional.of(failed), reopened.lastOutcome(42, 1));
            reopened.record(home);
            reopened.finish(new MigrationOutcome(7, 42, 1, MigrationOutcome.Result.OK, 120, 4096, PLANNED));
        }
        try (Ledger reopened = Ledger.open(file)) {
            assertTrue(reopened.migrations().isEmpty());
            assertEquals(
                    Optional.of(MigrationOutcome.Result.OK),
                    reopened.lastOutcome(42, 1).map(MigrationOutcome::result));
            Lend lend = reopened.assembly(42).orElseThrow().lends().getFirst();
            assertTrue(lend.home());
            assertEquals(Optional.of("w-43"), lend.workerId(), "the job's token names the worker that served it");
            assertTrue(LedgerLines.assembly(home).contains(" lend=1/n1/57/0/home/w-43 "), LedgerLines.assembly(home));
            reopened.forget(42, "done");
            assertTrue(reopened.lastOutcome(42, 1).isEmpty());
        }
        try (Ledger reopened = Ledger.open(file)) {
            assertEquals(8, reopened.nextMigrationId(), "ids are not reused after every job that had one ended");
            assertEquals(
                    List.of("migrations last=7"),
                    Files.readAllLines(file).stream()
                            .map(line -> line.substring(0, line.lastIndexOf(" crc=")))
                            .toList());
        }
    }

    @Test
    void malformedMigrationRecordsAreRefusedWithTheirReason() {
        for (String[] broken : List.of(
                new String[] {
                    "migration id=7 job=42 vgpu=1 node=n1 to=home phase=flying grant=- gpu=- worker=- started=1 sent=- by=hook",
                    "phase 'flying' is not claiming or sent"
                },
                new String[] {
                    "migration id=7 job=42 vgpu=1 node=n1 to=home phase=sent grant=- gpu=- worker=- started=1 sent=- by=hook",
                    "was sent without its grant holder"
                },
                new String[] {
                    "outcome id=7 job=42 vgpu=1 result=maybe blocked=0 bytes=0 at=1",
                    "result 'maybe' is not ok, failed or gave-up"
                },
                new String[] {
                    "assembly job=42 user=a node=n1 vgpus=2 local=1 phase=securing planned=1 lend=1/n1/-/-/home/w",
                    "a lend moved home has its grant holder"
                })) {
            IllegalArgumentException refused =
                    assertThrows(IllegalArgumentException.class, () -> LedgerLines.parse(sealed(broken[0])));
            assertTrue(refused.getMessage().contains(broken[1]), refused.getMessage());
        }
    }

    private static Assembly securing(long job) {
        return new Assembly(
                job,
                "alice",
                "n1",
                2,
                1,
                Assembly.Phase.SECURING,
                PLANNED,
                Optional.empty(),
                List.of(Lend.planned(1, "n2")));
    }
}
