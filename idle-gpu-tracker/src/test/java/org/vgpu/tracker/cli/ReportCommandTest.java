package org.vgpu.tracker.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.net.Endpoint;
import org.vgpu.siteconfig.cli.TrackerOptions;
import org.vgpu.tracker.SampleStatus;
import org.vgpu.tracker.StatusReport;
import org.vgpu.tracker.report.Report;
import org.vgpu.tracker.report.ReportJson;

/** {@code vgpu report} against a socket that answers {@code status json} as the tracker does. */
class ReportCommandTest {
    private static final Instant NOW = Instant.parse("2026-11-21T12:05:00Z");
    private final List<AutoCloseable> servers = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable server : servers) {
            server.close();
        }
    }

    @Test
    void theTableShowsEverySection() {
        assertTableHasLines(
                SampleStatus.report(),
                "vgpu report at 2026-11-21T12:05:00.000Z",
                "Assemblies: 1, borrowed GPUs: 2",
                "42   alice  n1    3      1      1=n2:3(holder 43) 2=n3:1(holder 44 LOST)  released  2026-11-21T12:00:03.000Z",
                "Borrowed GPUs now: 2",
                "42   alice  n1    5           1     n2:3               43       2026-11-21T12:00:03.000Z  1200   987654",
                "42   alice  n1    5           2     n3:1               44 LOST  2026-11-21T12:00:03.000Z  -      -",
                "Migrations: 1",
                "2026-11-21T12:01:00.000Z  41   1     n3:0 -> n1:2  GPU 2 of n1 was released  180         1073741824  done",
                "Held vgpu jobs: 1",
                "50   bob   2      waiting for 2 GPUs: most idle node n1 has 0, other nodes can lend 1",
                "Idle GPUs: 2",
                "n1    0     none",
                "n2    2     0,2",
                "Recently ended assemblies: 1",
                "40   carol  n2    2      1         done  2026-11-21T11:59:00.000Z");
    }

    @Test
    void aVgpuThatMovedHomeIsLocalOnItsGrantHoldersGpuNotBorrowed() {
        String table = assertTableHasLines(
                SampleStatus.reportAfterVgpu1CameHome(),
                "Assemblies: 1, borrowed GPUs: 1",
                "42   alice  n1    3      2      2=n3:1(holder 44 LOST)           released  2026-11-21T12:00:03.000Z",
                "Borrowed GPUs now: 1",
                "42   alice  n1    2,5         2     n3:1               44 LOST  2026-11-21T12:00:03.000Z  -      -");
        assertTrue(table.lines().noneMatch(line -> line.contains("n2:3")), table);
    }

    /** {@code vgpu report}'s table of a tracker that knows {@code status} has a line starting with each of these. */
    private String assertTableHasLines(StatusReport status, String... starts) {
        Endpoint tracker = tracker(ReportJson.replyLines(Report.of(status)));

        Run table = report("--tracker", tracker.toString());

        assertEquals(0, table.status(), table.err());
        for (String line : starts) {
            assertTrue(table.out().lines().anyMatch(each -> each.startsWith(line)), line + "\n---\n" + table.out());
        }
        return table.out();
    }

    @Test
    void jsonHasASchemaVersionIsoUtcTimesAndNullForWhatIsNotKnown() throws IOException {
        Endpoint tracker = tracker(ReportJson.replyLines(Report.of(SampleStatus.report())));

        Run json = report("--tracker", tracker.toString(), "--format", "json");

        assertEquals(0, json.status(), json.err());
        JsonNode root = new ObjectMapper().readTree(json.out());
        assertEquals(1, root.get("schema_version").asInt());
        assertEquals("2026-11-21T12:05:00.000Z", root.get("generated_at").asText());
        JsonNode second = root.get("borrowed").get(1);
        assertEquals("n3", second.get("lender_node").asText());
        assertEquals(1, second.get("lender_gpu").asInt());
        assertEquals("[5]", second.get("local_gpus").toString());
        assertTrue(second.get("holder_lost").asBoolean());
        assertTrue(second.get("forwarded_calls").isNull(), second.toString());
        assertEquals(1200, root.get("borrowed").get(0).get("forwarded_calls").asLong());
        JsonNode migration = root.get("migrations").get(0);
        assertEquals("2026-11-21T12:01:00.000Z", migration.get("started_at").asText());
        assertEquals(180, migration.get("blocked_ms").asLong());
        assertEquals("n3:0", migration.get("from").asText());
        assertEquals("done", migration.get("outcome").asText());
        assertTrue(root.get("assemblies").get(0).get("released").isTextual());
        assertEquals(
                "waiting for 2 GPUs: most idle node n1 has 0, other nodes can lend 1",
                root.get("held_jobs").get(0).get("reason").asText());
        assertEquals("[0,2]", root.get("idle_gpus").get(1).get("gpus").toString());
        assertTrue(root.get("ended").get(0).get("reason").isNull());
    }

    @Test
    void everyTimeHasOneFormatIsoUtcWithMilliseconds() {
        Instant precise = Instant.parse("2026-11-21T12:05:00.123456789Z");
        StatusReport status =
                new StatusReport(precise, List.of(), List.of(), List.of(), List.of(), List.of(), Map.of());

        String json = ReportJson.line(Report.of(status));

        assertTrue(json.contains("\"generated_at\":\"2026-11-21T12:05:00.123Z\""), json);
        assertEquals(
                Instant.parse("2026-11-21T12:05:00.123Z"),
                ReportJson.fromReply(ReportJson.replyLines(Report.of(status)), "t")
                        .generatedAt());
    }

    @Test
    void csvCarriesTheSameFactsAsJson() throws IOException {
        Endpoint tracker = tracker(ReportJson.replyLines(Report.of(SampleStatus.report())));
        JsonNode json = new ObjectMapper()
                .readTree(report("--tracker", tracker.toString(), "--format", "json")
                        .out());

        Run csv = report("--tracker", tracker.toString(), "--format", "csv");

        assertEquals(0, csv.status(), csv.err());
        assertCellsAreTheJsons(json, csv.out(), ReportCommandTest::csvCells, ";");
        assertTrue(
                csv.out()
                        .contains(
                                "held_jobs,50,bob,,2,,,,,,,,,,,,,,,,,,,,\"waiting for 2 GPUs: most idle node n1 has 0,"
                                        + " other nodes can lend 1\",,,,,,,,,"),
                csv.out());
    }

    /**
     * {@code table} (a header, then one line per row, split into cells by {@code cells}) holds every row of every
     * section of the report's {@code json} in order, each field in the column of its name, lists joined with {@code
     * listSeparator}, null as an empty cell.
     */
    private static void assertCellsAreTheJsons(
            JsonNode json, String table, Function<String, List<String>> cells, String listSeparator) {
        List<String> lines = table.lines().toList();
        List<String> header = cells.apply(lines.getFirst());
        assertEquals("section", header.getFirst());
        int rows = 0;
        for (String section : List.of("assemblies", "borrowed", "migrations", "held_jobs", "idle_gpus", "ended")) {
            for (JsonNode row : json.get(section)) {
                String line = lines.get(++rows);
                List<String> rowCells = cells.apply(line);
                assertEquals(header.size(), rowCells.size(), line);
                assertEquals(section, rowCells.getFirst(), line);
                for (var field : row.properties()) {
                    JsonNode value = field.getValue();
                    String expected = value.isNull()
                            ? ""
                            : value.isArray()
                                    ? String.join(
                                            listSeparator,
                                            value.valueStream()
                                                    .map(JsonNode::asText)
                                                    .toList())
                                    : value.asText();
                    assertEquals(
                            expected, rowCells.get(header.indexOf(field.getKey())), field.getKey() + " in " + line);
                }
            }
        }
        assertEquals(rows + 1, lines.size(), table);
    }

    /** Cells of one CSV line: commas inside double quotes belong to the cell. */
    private static List<String> csvCells(String line) {
        List<String> cells = new ArrayList<>();
        StringBuilder cell = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c == '"') {
                quoted = !quoted;
            } else if (c == ',' && !quoted) {
                cells.add(cell.toString());
                cell.setLength(0);
            } else {
                cell.append(c);
            }
        }
        cells.add(cell.toString());
        return cells;
    }

    @Test
    void aReportLongerThanOneReplyLineComesInPiecesAndWhole() {
        List<StatusReport.Ended> ended = new ArrayList<>();
        for (int job = 1; job <= 200; job++) {
            ended.add(new StatusReport.Ended(
                    job,
                    "user" + job,
                    "n1",
                    4,
                    3,
                    "aborted",
                    NOW,
                    Optional.of("holder job " + job + " on n2 is FAILED")));
        }
        StatusReport big = new StatusReport(NOW, List.of(), List.of(), List.of(), List.of(), ended, Map.of());
        List<String> lines = ReportJson.replyLines(Report.of(big));
        assertTrue(lines.size() > 2, "a report of 200 ended assemblies takes several lines");
        assertTrue(lines.stream().allMatch(line -> line.length() <= 8190));

        Run table = report("--tracker", tracker(lines).toString());

        assertEquals(0, table.status(), table.err());
        assertTrue(table.out().contains("Recently ended assemblies: 200"), table.out());
        assertTrue(table.out().contains("aborted: holder job 200 on n2 is FAILED"), table.out());
        assertEquals(Report.of(big), ReportJson.fromReply(lines, "t"));
    }

    @Test
    void somethingThatIsNotATrackerIsAnErrorNeverAnEmptyReport() throws Exception {
        // A peer speaking the line protocol, but not a tracker (a lender's control port says so in an error line).
        Run lender = report(
                "--tracker", tracker(List.of("error unknown command 'status'")).toString());
        assertEquals(1, lender.status());
        assertTrue(
                lender.err()
                        .contains("is not a vgpu tracker, or not one of this version: it answered 'unknown command"
                                + " 'status''"),
                lender.err());
        assertEquals("", lender.out());

        Run okOnly = report("--tracker", tracker(List.of("ok")).toString());
        assertEquals(1, okOnly.status());
        assertTrue(okOnly.err().contains("is not a vgpu tracker"), okOnly.err());

        Run oldTracker = report(
                "--tracker",
                tracker(List.of("assembly job=1", "ok assemblies=1 waiting=0")).toString());
        assertEquals(1, oldTracker.status());
        assertTrue(oldTracker.err().contains("is not a vgpu tracker"), oldTracker.err());

        Run notAReport = report(
                "--tracker",
                tracker(List.of("json {\"hello\":1}", "ok json_bytes=11")).toString());
        assertEquals(1, notAReport.status());
        assertTrue(notAReport.err().contains("is not a vgpu report"), notAReport.err());

        List<String> cut = new ArrayList<>(ReportJson.replyLines(Report.of(SampleStatus.report())));
        cut.set(0, cut.getFirst().substring(0, 100));
        Run shortened = report("--tracker", tracker(cut).toString());
        assertEquals(1, shortened.status());
        assertTrue(shortened.err().contains("(cut?)"), shortened.err());

        // An HTTP server answers with a status line and closes the connection.
        Endpoint http = rawServer("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        Run web = report("--tracker", http.toString());
        assertEquals(1, web.status());
        assertTrue(web.err().startsWith("vgpu report: "), web.err());
        assertEquals("", web.out());

        Endpoint closed = tracker(List.of("ok"));
        stop();
        servers.clear();
        Run unreachable = report("--tracker", closed.toString());
        assertEquals(1, unreachable.status());
        assertTrue(unreachable.err().contains("cannot ask " + closed + " 'status json'"), unreachable.err());
    }

    @Test
    void withoutConfigOrTrackerItReadsTheSameDefaultConfigurationAsTheAdminCommands() {
        assumeFalse(Files.exists(Path.of(TrackerOptions.DEFAULT_CONFIG)), "this machine has a site configuration");

        Run run = report();

        assertNotEquals(0, run.status());
        assertTrue(run.err().startsWith("vgpu report: "), run.err());
        assertTrue(run.err().contains(TrackerOptions.DEFAULT_CONFIG + ": no such file"), run.err());
        assertTrue(
                new ReportCommand()
                        .options()
                        .getOption("config")
                        .getDescription()
                        .contains("default " + TrackerOptions.DEFAULT_CONFIG),
                "--help names the default");
    }

    @Test
    void jobAndUserFiltersTakeCommaListsAndRepeats() {
        Endpoint tracker = tracker(ReportJson.replyLines(Report.of(SampleStatus.report())));

        Run job42 = report("--tracker", tracker.toString(), "--job", "42");
        assertEquals(0, job42.status(), job42.err());
        assertTrue(job42.out().contains("Assemblies: 1, borrowed GPUs: 2"), job42.out());
        assertTrue(job42.out().contains("Held vgpu jobs: 0"), job42.out());
        assertTrue(job42.out().contains("Recently ended assemblies: 0"), job42.out());
        assertTrue(job42.out().contains("Migrations: 0"), "job 41's migration is not job 42's\n" + job42.out());
        assertTrue(job42.out().contains("Idle GPUs: 2"), "idle GPUs are no job's and stay\n" + job42.out());

        Run someJobs = report("--tracker", tracker.toString(), "--job", "50, 40", "--job", "41");
        assertEquals(0, someJobs.status(), someJobs.err());
        assertTrue(someJobs.out().contains("Assemblies: 0, borrowed GPUs: 0"), someJobs.out());
        assertTrue(someJobs.out().contains("Held vgpu jobs: 1"), someJobs.out());
        assertTrue(someJobs.out().contains("Recently ended assemblies: 1"), someJobs.out());
        assertTrue(someJobs.out().contains("Migrations: 1"), someJobs.out());

        Run users = report("--tracker", tracker.toString(), "--user", "bob,carol", "--format", "json");
        assertEquals(0, users.status(), users.err());
        assertTrue(users.out().contains("\"user\" : \"bob\""), users.out());
        assertTrue(users.out().contains("\"user\" : \"carol\""), users.out());
        assertFalse(users.out().contains("alice"), users.out());
    }

    @Test
    void parsable2IsOneBarSeparatedTableWithTheJsonsFacts() throws IOException {
        Endpoint tracker = tracker(ReportJson.replyLines(Report.of(SampleStatus.report())));
        JsonNode json = new ObjectMapper()
                .readTree(report("--tracker", tracker.toString(), "--format", "json")
                        .out());

        Run parsable = report("--tracker", tracker.toString(), "-P");

        assertEquals(0, parsable.status(), parsable.err());
        assertEquals(
                parsable.out(),
                report("--tracker", tracker.toString(), "--parsable2").out());
        assertCellsAreTheJsons(json, parsable.out(), line -> List.of(line.split("\\|", -1)), ",");
        List<String> lines = parsable.out().lines().toList();

        Run filtered = report("--tracker", tracker.toString(), "-P", "--user", "bob");
        List<String> kept = filtered.out().lines().toList();
        assertEquals(lines.getFirst(), kept.getFirst());
        assertEquals(
                List.of("held_jobs", "idle_gpus", "idle_gpus"),
                kept.stream()
                        .skip(1)
                        .map(line -> line.substring(0, line.indexOf('|')))
                        .toList());
        assertTrue(kept.get(1).startsWith("held_jobs|50|bob|"), kept.get(1));
    }

    @Test
    void badFiltersAreOneLineUsageErrors() {
        Map<List<String>, String> refusals = Map.of(
                List.of("--job", "abc"),
                        "--job takes Slurm job ids, the numbers scontrol shows as JobId (an array task's 12_3 or a step's 12.0 is none), got 'abc'",
                List.of("--job", "12.batch"), "got '12.batch'",
                List.of("--job", "12_3"), "got '12_3'",
                List.of("--job", "0"), "got '0'",
                List.of("--job", "42,,43"), "--job takes a comma-separated list, got an empty item in '42,,43'",
                List.of("--user", ""), "--user takes a comma-separated list, got an empty item in ''",
                List.of("--user", "alice,"), "got an empty item in 'alice,'",
                List.of("--user", "al ice"), "--user takes user names, got 'al ice'",
                List.of("--user", "a\nb"), "--user takes user names, got 'a | b'",
                List.of("-P", "--format", "csv"), "give --format or --parsable2, not both");
        for (var refusal : refusals.entrySet()) {
            List<String> args = new ArrayList<>(List.of("--tracker", "127.0.0.1:1"));
            args.addAll(refusal.getKey());

            Run run = report(args.toArray(String[]::new));

            assertEquals(2, run.status(), refusal.getKey() + ": " + run.err());
            List<String> err = run.err().lines().toList();
            assertEquals(2, err.size(), "the reason on one line, then the hint: " + run.err());
            assertTrue(err.getFirst().startsWith("vgpu report: "), run.err());
            assertEquals("see `vgpu report --help`", err.get(1));
            assertTrue(err.getFirst().contains(refusal.getValue()), refusal.getKey() + ": " + err.getFirst());
            assertEquals("", run.out());
        }
    }

    @Test
    void badUsageIsAUsageError() {
        assertEquals(2, report("--config", "vgpu.conf", "--tracker", "h:1").status());
        assertEquals(2, report("--tracker", "h:1", "--format", "xml").status());
        assertEquals(2, report("--tracker", "nonsense").status());
    }

    private Endpoint tracker(List<String> reply) {
        LineServer server = LineServer.start(
                new Endpoint("127.0.0.1", 0),
                new LineServer.Limits("fake tracker", 64, 4, Duration.ofSeconds(5)),
                (request, host) -> request.text().equals("status json") ? reply : List.of("error usage"));
        servers.add(server);
        return server.endpoint();
    }

    /** A TCP server that answers any connection with {@code answer} and closes it. */
    private Endpoint rawServer(String answer) throws IOException {
        ServerSocket socket = new ServerSocket(0, 4, java.net.InetAddress.getLoopbackAddress());
        servers.add(socket);
        Thread.ofVirtual().start(() -> {
            while (!socket.isClosed()) {
                try (Socket client = socket.accept();
                        OutputStream out = client.getOutputStream()) {
                    out.write(answer.getBytes(StandardCharsets.US_ASCII));
                } catch (IOException e) {
                    return;
                }
            }
        });
        return new Endpoint("127.0.0.1", socket.getLocalPort());
    }

    private record Run(int status, String out, String err) {}

    private static Run report(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = SubcommandRunner.run(
                new ReportCommand(),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
