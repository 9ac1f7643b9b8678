package org.vgpu.simulator.input;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.stream.Stream;

import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.Workload;
import org.vgpu.simulator.workload.WorkloadClass;
import org.vgpu.simulator.workload.WorkloadException;
import org.vgpu.tracker.slurm.LendJobComment;

/**
 * A site's job history as {@code sacct --parsable2} prints it (with its header line), on the nodes {@code --cluster}
 * gives, since sacct does not say how many GPUs a node has. Columns are found by the header's names; JobID, Submit,
 * Start, End, Timelimit and AllocTRES are needed, User and Comment are used where present. Job steps (a JobID with a
 * dot) are not jobs and are passed over. So are the tracker's holder and grant holder jobs, known by their Comment
 * ({@link LendJobComment}): each keeps one GPU for a vgpu job, whose GPUs already count it. A job's GPUs are its
 * AllocTRES {@code gres/vgpu=N} when it has one (a vgpu job: the tracker sets {@code gres/gpu} to the local ones among
 * them), else {@code gres/gpu=N}; its CPUs {@code cpu=N}; it runs from Start to End and that Start is its recorded
 * start. Jobs that never started
 * (Start Unknown or None), that had not ended when sacct ran, that used no GPU, that spanned nodes or that fit no
 * node are left out and counted. An unlimited time limit becomes {@value #UNLIMITED_DAYS} days (backfill never
 * starts such a job ahead of others, as with Slurm); a job that ran past its limit (Slurm's OverTimeLimit, KillWait)
 * gets its run as its limit.
 */
public final class SacctReader {
    /** The sacct command the documentation tells an admin to run; its columns are the ones this reader reads. */
    public static final String COMMAND = "sacct --allusers --parsable2 --noconvert --starttime YYYY-MM-DD"
            + " --endtime now -o JobID,User,Account,Submit,Start,End,Timelimit,AllocTRES,NodeList,State,Comment";

    /** Which jobs of a history the borrowing policies may borrow for. */
    public enum Borrowers {
        /** Every job, as if each had asked {@code --gres=vgpu}: what vgpu would have done for the history. */
        ALL,
        /** The vgpu jobs alone (AllocTRES {@code gres/vgpu}), as the history ran: plain GPU jobs use their node's. */
        VGPU_JOBS
    }

    static final long UNLIMITED_DAYS = 365;
    private static final List<String> NEEDED = List.of("JobID", "Submit", "Start", "End", "Timelimit", "AllocTRES");
    private static final List<String> KNOWN =
            Stream.concat(NEEDED.stream(), Stream.of("User", "Comment")).toList();
    private static final String HEADER_EXPECTED = "expected sacct's header line naming at least "
            + String.join("|", NEEDED) + " (run " + COMMAND + ", without -n)";

    private final Path file;
    private final NodeFit fit;
    private final List<SimNode> nodes;
    private final Problems problems;
    private final Borrowers borrowers;
    private final Tally tally = new Tally("jobs");
    private final List<Row> rows = new ArrayList<>();
    private int steps;
    /** Holder jobs per vgpu job they lent to, and grant holders, by their Comment. */
    private final Map<Long, Integer> holdersByJob = new HashMap<>();

    private int grants;

    private SacctReader(Path file, List<SimNode> nodes, Borrowers borrowers) {
        this.file = file;
        this.borrowers = borrowers;
        this.nodes = List.copyOf(nodes);
        this.fit = new NodeFit(nodes);
        this.problems = new Problems(file);
    }

    /**
     * The jobs of {@code file} on {@code nodes}.
     *
     * @throws WorkloadException with every malformed line, or when no job is left to simulate
     * @throws IOException when the file cannot be read
     */
    public static LoadedWorkload read(Path file, List<SimNode> nodes) throws IOException, WorkloadException {
        return read(file, nodes, Borrowers.ALL);
    }

    /**
     * The jobs of {@code file} on {@code nodes}, those that may borrow chosen by {@code borrowers}.
     *
     * @throws WorkloadException with every malformed line, or when no job is left to simulate
     * @throws IOException when the file cannot be read
     */
    public static LoadedWorkload read(Path file, List<SimNode> nodes, Borrowers borrowers)
            throws IOException, WorkloadException {
        return new SacctReader(file, nodes, borrowers).read();
    }

    private record Row(
            String id,
            long submit,
            long start,
            long run,
            OptionalLong limit,
            int gpus,
            int cpus,
            String user,
            boolean vgpuJob) {}

    private LoadedWorkload read() throws IOException, WorkloadException {
        try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String headerLine = reader.readLine();
            Header columns = headerLine == null ? new Header(Map.of(), 0) : Header.of(headerLine);
            if (!columns.index().keySet().containsAll(NEEDED)) {
                problems.at(
                        1,
                        headerLine == null ? "the file is empty" : "'" + headerLine + "' is no sacct header",
                        HEADER_EXPECTED);
                problems.throwIfAny();
            }
            String text;
            long number = 1;
            while ((text = reader.readLine()) != null) {
                number++;
                if (!text.isBlank()) {
                    line(number, text, columns);
                }
            }
        }
        problems.throwIfAny();
        if (rows.isEmpty()) {
            problems.ofFile(
                    "no job that ran on GPUs is left to simulate",
                    "expected sacct lines of jobs with" + " gres/gpu or gres/vgpu in AllocTRES, a Start and an End");
            problems.throwIfAny();
        }
        long origin = rows.stream().mapToLong(Row::submit).min().orElseThrow();
        List<SimJob> jobs = rows.stream().map(row -> job(row, origin)).toList();
        List<String> summary = new ArrayList<>(tally.lines());
        summary.add(String.format(Locale.ROOT, "passed over %,d job steps (JobID with a dot)", steps));
        if (!holdersByJob.isEmpty() || grants > 0) {
            summary.add(String.format(
                    Locale.ROOT,
                    "passed over %,d holder jobs of %,d vgpu jobs and %,d grant holders (Comment 'vgpu holder: ...',"
                            + " 'vgpu grant: ...'): GPUs the tracker kept for vgpu jobs, counted in those jobs' own",
                    holdersByJob.values().stream().mapToInt(Integer::intValue).sum(),
                    holdersByJob.size(),
                    grants));
        }
        long vgpuJobs = rows.stream().filter(Row::vgpuJob).count();
        summary.add(String.format(
                Locale.ROOT,
                "%,d of the kept jobs asked vgpu (gres/vgpu); %s",
                vgpuJobs,
                borrowers == Borrowers.ALL
                        ? "the borrowing policies may borrow for every job (--borrowers all)"
                        : "the borrowing policies borrow for those alone (--borrowers vgpu-jobs)"));
        return new LoadedWorkload(new Workload("sacct " + file, nodes, jobs), summary);
    }

    private SimJob job(Row row, long origin) {
        long limit;
        if (row.limit().isEmpty()) {
            limit = Math.max(UNLIMITED_DAYS * 86_400, row.run());
        } else {
            limit = Math.max(row.limit().getAsLong(), Math.max(row.run(), 1));
        }
        return new SimJob(
                row.id(),
                row.submit() - origin,
                row.gpus(),
                row.cpus(),
                limit,
                row.run(),
                row.user(),
                WorkloadClass.UNKNOWN,
                OptionalLong.of(row.start() - origin),
                borrowers == Borrowers.ALL || row.vgpuJob());
    }

    /** Where each column the reader uses is (by its name in {@link #NEEDED}, and User), and how many there are. */
    private record Header(Map<String, Integer> index, int fields) {
        static Header of(String line) {
            Map<String, Integer> index = new HashMap<>();
            String[] names = line.split("\\|", -1);
            for (int i = 0; i < names.length; i++) {
                for (String known : KNOWN) {
                    if (names[i].strip().equalsIgnoreCase(known)) {
                        index.put(known, i);
                    }
                }
            }
            return new Header(Map.copyOf(index), names.length);
        }

        boolean has(String column) {
            return index.containsKey(column);
        }

        String field(String[] fields, String column) {
            return fields[index.get(column)];
        }
    }

    private void line(long number, String text, Header columns) {
        String[] fields = text.split("\\|", -1);
        int expected = columns.fields();
        if (fields.length != expected) {
            problems.at(
                    number,
                    fields.length + " fields",
                    "expected " + expected + " separated by |, as the header"
                            + " line names (a line cut short, or a field holding a |)");
            return;
        }
        String id = columns.field(fields, "JobID").strip();
        if (id.isEmpty()) {
            problems.at(number, "no JobID", "expected the job's id, e.g. 4711 or 4711_3");
            return;
        }
        if (id.contains(".")) {
            steps++;
            return;
        }
        if (columns.has("Comment") && lendJob(number, columns.field(fields, "Comment"))) {
            return;
        }
        int before = problems.count();
        OptionalLong submit = stamp(number, "Submit", columns.field(fields, "Submit"), false);
        OptionalLong start = stamp(number, "Start", columns.field(fields, "Start"), true);
        OptionalLong end = stamp(number, "End", columns.field(fields, "End"), true);
        OptionalLong limit = OptionalLong.empty();
        try {
            limit = SlurmTimes.limitSeconds(columns.field(fields, "Timelimit").strip());
        } catch (IllegalArgumentException e) {
            problems.at(
                    number,
                    "Timelimit '" + columns.field(fields, "Timelimit") + "' is no Slurm time limit",
                    "expected " + SlurmTimes.LIMIT_FORMAT);
        }
        Map<String, Long> tres = tres(number, columns.field(fields, "AllocTRES"));
        if (problems.count() > before) {
            return;
        }
        if (start.isEmpty()) {
            tally.skip("that never started (Start Unknown or None)");
            return;
        }
        if (end.isEmpty()) {
            tally.skip("that had not ended when sacct ran (End Unknown)");
            return;
        }
        if (start.getAsLong() < submit.getAsLong() || end.getAsLong() < start.getAsLong()) {
            problems.at(number, "Submit, Start and End are out of order", "expected Submit <= Start <= End");
            return;
        }
        long localGpus = tres.getOrDefault("gres/gpu", 0L);
        long vgpus = tres.getOrDefault("gres/vgpu", 0L);
        if (vgpus > 0 && localGpus > vgpus) {
            problems.at(
                    number,
                    "AllocTRES has gres/gpu=" + localGpus + " beside gres/vgpu=" + vgpus,
                    "expected a vgpu job's gres/gpu (its local GPUs, set by the tracker) to be at most its"
                            + " gres/vgpu");
            return;
        }
        int gpus = Math.toIntExact(vgpus > 0 ? vgpus : localGpus);
        int cpus = Math.toIntExact(Math.max(1, tres.getOrDefault("cpu", 1L)));
        if (gpus == 0) {
            tally.skip("that used no GPU (no gres/gpu or gres/vgpu in AllocTRES)");
        } else if (tres.getOrDefault("node", 1L) > 1) {
            tally.skip("that spanned nodes (the simulator places a job on one node, as vgpu jobs are)");
        } else if (!fit.fits(gpus, cpus)) {
            tally.skip(NodeFit.TOO_BIG);
        } else {
            long run = end.getAsLong() - start.getAsLong();
            if (limit.isEmpty()) {
                tally.adjust("had an unlimited time limit, taken as " + UNLIMITED_DAYS + " days");
            } else if (run > limit.getAsLong()) {
                tally.adjust("ran past their time limit (OverTimeLimit, KillWait): their run taken as their limit");
            }
            String user = columns.has("User") ? columns.field(fields, "User").strip() : "";
            rows.add(new Row(id, submit.getAsLong(), start.getAsLong(), run, limit, gpus, cpus, user, vgpus > 0));
            tally.keep();
        }
    }

    /** Whether the line is a holder or grant holder of the tracker's (counted), by its Comment. */
    private boolean lendJob(long number, String comment) {
        try {
            Optional<LendJobComment> lend = LendJobComment.parse(comment);
            if (lend.isEmpty()) {
                return false;
            }
            if (lend.get().kind() == LendJobComment.Kind.HOLDER) {
                holdersByJob.merge(lend.get().job(), 1, Integer::sum);
            } else {
                grants++;
            }
        } catch (IllegalArgumentException e) {
            problems.at(
                    number,
                    "Comment '" + comment.strip() + "' begins as a vgpu holder's",
                    "expected " + LendJobComment.FORMAT);
        }
        return true;
    }

    private OptionalLong stamp(long number, String column, String value, boolean mayBeMissing) {
        String stamp = value.strip();
        if (SlurmTimes.notYet(stamp)) {
            if (!mayBeMissing) {
                problems.at(number, column + " '" + value + "' is missing", "expected " + SlurmTimes.STAMP_FORMAT);
            }
            return OptionalLong.empty();
        }
        try {
            return OptionalLong.of(SlurmTimes.epochSecond(stamp));
        } catch (DateTimeParseException e) {
            problems.at(
                    number,
                    column + " '" + value + "' is no time stamp",
                    "expected " + SlurmTimes.STAMP_FORMAT + (mayBeMissing ? ", Unknown or None" : ""));
            return OptionalLong.empty();
        }
    }

    /** AllocTRES's counts: cpu, node, gres/gpu, gres/vgpu (typed entries like gres/gpu:h100 are in these totals). */
    private Map<String, Long> tres(long number, String value) {
        Map<String, Long> counts = new HashMap<>();
        if (value.isBlank()) {
            return counts;
        }
        for (String entry : value.split(",", -1)) {
            int equals = entry.indexOf('=');
            String key = equals < 0 ? entry : entry.substring(0, equals).strip();
            if (!List.of("cpu", "node", "gres/gpu", "gres/vgpu").contains(key)) {
                if (equals < 0) {
                    problems.at(
                            number,
                            "AllocTRES entry '" + entry + "' has no count",
                            "expected NAME=COUNT entries" + " joined by commas, e.g. cpu=8,gres/gpu=2,node=1");
                }
                continue;
            }
            try {
                long count = Long.parseLong(entry.substring(equals + 1).strip());
                if (count < 0 || count > Integer.MAX_VALUE) {
                    throw new NumberFormatException();
                }
                counts.put(key, count);
            } catch (NumberFormatException | IndexOutOfBoundsException e) {
                problems.at(
                        number,
                        "AllocTRES entry '" + entry + "' has no whole count",
                        "expected " + key + "=COUNT, e.g. " + key + "=2");
            }
        }
        return counts;
    }
}
