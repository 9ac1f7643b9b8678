package org.vgpu.tracker.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.stream.Collectors;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.net.Endpoint;
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Lend;

/**
 * {@code vgpu report}: what the tracker has lent, to whom, and which vgpu jobs wait and why, as a
 * table (default), JSON or CSV. Asks the running tracker ({@code status} on its socket).
 */
public final class ReportCommand implements Subcommand {
    private static final List<String> FORMATS = List.of("table", "json", "csv");
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    @Override
    public String name() {
        return "report";
    }

    @Override
    public String summary() {
        return "show every assembly, borrowed GPU and waiting vgpu job (table, JSON or CSV)";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("config")
                        .hasArg()
                        .argName("FILE")
                        .desc("the site configuration, which names the tracker")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tracker")
                        .hasArg()
                        .argName("HOST:PORT")
                        .desc("the tracker to ask, instead of the configuration's")
                        .get())
                .addOption(Option.builder()
                        .longOpt("format")
                        .hasArg()
                        .argName("FORMAT")
                        .desc("table, json or csv (default table)")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        if (line.hasOption("config") == line.hasOption("tracker")) {
            throw new ParseException("give either --config FILE or --tracker HOST:PORT");
        }
        String format = CommandLines.choice(line, "format", "table", FORMATS);
        Endpoint tracker;
        if (line.hasOption("tracker")) {
            try {
                tracker = Endpoint.parse(line.getOptionValue("tracker"));
            } catch (VgpuFailure e) {
                throw new ParseException("--tracker: " + e.detail());
            }
        } else {
            tracker = SiteConfigReader.read(Path.of(line.getOptionValue("config")))
                    .tracker();
        }
        TrackerStatus status;
        try {
            status = TrackerStatus.parse(LineClient.request(tracker, "status", TIMEOUT));
        } catch (IllegalArgumentException e) {
            err.println("vgpu report: " + e.getMessage());
            return 1;
        }
        switch (format) {
            case "json" -> out.println(json(status));
            case "csv" -> csv(status, out);
            default -> table(status, out);
        }
        return 0;
    }

    private static void table(TrackerStatus status, PrintStream out) {
        List<List<String>> rows = new ArrayList<>();
        rows.add(List.of("JOB", "USER", "NODE", "VGPUS", "LOCAL", "BORROWED (vGPU=NODE:GPU holder)", "PHASE", "SINCE"));
        for (Assembly assembly : status.assemblies()) {
            String borrowed = assembly.lends().stream()
                    .map(lend -> borrowedCell(lend, status))
                    .collect(Collectors.joining(" "));
            rows.add(List.of(
                    Long.toString(assembly.job()),
                    assembly.user(),
                    assembly.node(),
                    Integer.toString(assembly.vgpus()),
                    Integer.toString(assembly.localGpus()),
                    borrowed.isEmpty() ? "-" : borrowed,
                    assembly.phase().name().toLowerCase(),
                    assembly.released().orElse(assembly.planned()).toString()));
        }
        out.println("Assemblies: " + status.assemblies().size() + ", borrowed GPUs: "
                + status.assemblies().stream()
                        .mapToInt(assembly -> assembly.lends().size())
                        .sum());
        printAligned(rows, out);
        out.println();
        out.println("Waiting vgpu jobs: " + status.waiting().size());
        List<List<String>> waiting = new ArrayList<>();
        waiting.add(List.of("JOB", "USER", "VGPUS", "REASON"));
        for (Map<String, String> job : status.waiting()) {
            waiting.add(List.of(
                    job.getOrDefault("job", "?"),
                    job.getOrDefault("user", "?"),
                    job.getOrDefault("vgpus", "?"),
                    job.getOrDefault("reason", "")));
        }
        printAligned(waiting, out);
        out.println();
        out.println("Recently ended assemblies: " + status.ended().size());
        List<List<String>> ended = new ArrayList<>();
        ended.add(List.of("JOB", "USER", "NODE", "VGPUS", "BORROWED", "WHY", "AT"));
        for (Map<String, String> job : status.ended()) {
            ended.add(List.of(
                    job.getOrDefault("job", "?"),
                    job.getOrDefault("user", "?"),
                    job.getOrDefault("node", "?"),
                    job.getOrDefault("vgpus", "?"),
                    job.getOrDefault("borrowed", "?"),
                    job.getOrDefault("why", "?") + (job.containsKey("reason") ? ": " + job.get("reason") : ""),
                    job.getOrDefault("at", "?")));
        }
        printAligned(ended, out);
    }

    private static String borrowedCell(Lend lend, TrackerStatus status) {
        String gpu = lend.gpu().isPresent() ? Integer.toString(lend.gpu().getAsInt()) : "?";
        String holder = lend.holder().isPresent() ? Long.toString(lend.holder().getAsLong()) : "not submitted";
        boolean lost = lend.holder().isPresent()
                && status.lostHolders().contains(lend.holder().getAsLong());
        return lend.vgpu() + "=" + lend.node() + ":" + gpu + "(holder " + holder + (lost ? " LOST" : "") + ")";
    }

    private static void printAligned(List<List<String>> rows, PrintStream out) {
        int columns = rows.getFirst().size();
        int[] widths = new int[columns];
        for (List<String> row : rows) {
            for (int i = 0; i < columns; i++) {
                widths[i] = Math.max(widths[i], row.get(i).length());
            }
        }
        for (List<String> row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < columns; i++) {
                line.append(i == columns - 1 ? row.get(i) : String.format("%-" + widths[i] + "s  ", row.get(i)));
            }
            out.println(line.toString().stripTrailing());
        }
    }

    private static void csv(TrackerStatus status, PrintStream out) {
        out.println("kind,job,user,node,vgpu,lender,gpu,holder,worker,phase,reason");
        for (Assembly assembly : status.assemblies()) {
            for (int vgpu = 0; vgpu < assembly.localGpus(); vgpu++) {
                out.println(String.join(
                        ",",
                        "local",
                        Long.toString(assembly.job()),
                        assembly.user(),
                        assembly.node(),
                        Integer.toString(vgpu),
                        assembly.node(),
                        "",
                        "",
                        "",
                        assembly.phase().name().toLowerCase(),
                        ""));
            }
            for (Lend lend : assembly.lends()) {
                out.println(String.join(
                        ",",
                        "borrowed",
                        Long.toString(assembly.job()),
                        assembly.user(),
                        assembly.node(),
                        Integer.toString(lend.vgpu()),
                        lend.node(),
                        lend.gpu().isPresent() ? Integer.toString(lend.gpu().getAsInt()) : "",
                        number(lend.holder()),
                        lend.worker().map(Endpoint::toString).orElse(""),
                        assembly.phase().name().toLowerCase(),
                        ""));
            }
        }
        for (Map<String, String> job : status.waiting()) {
            out.println(String.join(
                    ",",
                    "waiting",
                    job.getOrDefault("job", ""),
                    job.getOrDefault("user", ""),
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "held",
                    csvField(job.getOrDefault("reason", ""))));
        }
    }

    private static String csvField(String text) {
        return text.contains(",") || text.contains("\"") ? "\"" + text.replace("\"", "\"\"") + "\"" : text;
    }

    private static String number(OptionalLong value) {
        return value.isPresent() ? Long.toString(value.getAsLong()) : "";
    }

    private static String json(TrackerStatus status) {
        StringBuilder json = new StringBuilder("{\"assemblies\":[");
        List<String> assemblies = new ArrayList<>();
        for (Assembly assembly : status.assemblies()) {
            List<String> lends = new ArrayList<>();
            for (Lend lend : assembly.lends()) {
                lends.add("{\"vgpu\":" + lend.vgpu() + ",\"node\":" + string(lend.node()) + ",\"holder\":"
                        + (lend.holder().isPresent() ? lend.holder().getAsLong() : "null") + ",\"gpu\":"
                        + (lend.gpu().isPresent() ? lend.gpu().getAsInt() : "null") + ",\"worker\":"
                        + lend.worker()
                                .map(endpoint -> string(endpoint.toString()))
                                .orElse("null") + ",\"worker_id\":"
                        + lend.workerId().map(ReportCommand::string).orElse("null") + ",\"holder_lost\":"
                        + (lend.holder().isPresent()
                                && status.lostHolders().contains(lend.holder().getAsLong())) + "}");
            }
            assemblies.add("{\"job\":" + assembly.job() + ",\"user\":" + string(assembly.user()) + ",\"node\":"
                    + string(assembly.node()) + ",\"vgpus\":" + assembly.vgpus() + ",\"local_gpus\":"
                    + assembly.localGpus()
                    + ",\"phase\":" + string(assembly.phase().name().toLowerCase()) + ",\"planned\":"
                    + string(assembly.planned().toString()) + ",\"released\":"
                    + assembly.released()
                            .map(Instant::toString)
                            .map(ReportCommand::string)
                            .orElse("null") + ",\"borrowed\":["
                    + String.join(",", lends) + "]}");
        }
        json.append(String.join(",", assemblies)).append("],\"waiting\":[");
        json.append(status.waiting().stream().map(ReportCommand::jsonObject).collect(Collectors.joining(",")));
        json.append("],\"ended\":[");
        json.append(status.ended().stream().map(ReportCommand::jsonObject).collect(Collectors.joining(",")));
        return json.append("]}").toString();
    }

    private static String jsonObject(Map<String, String> fields) {
        return fields.entrySet().stream()
                .map(entry -> string(entry.getKey()) + ":"
                        + (entry.getValue().matches("-?[0-9]{1,18}") ? entry.getValue() : string(entry.getValue())))
                .collect(Collectors.joining(",", "{", "}"));
    }

    private static String string(String text) {
        StringBuilder quoted = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> quoted.append("\\\"");
                case '\\' -> quoted.append("\\\\");
                default -> {
                    if (c < ' ') {
                        quoted.append(String.format("\\u%04x", (int) c));
                    } else {
                        quoted.append(c);
                    }
                }
            }
        }
        return quoted.append('"').toString();
    }
}
