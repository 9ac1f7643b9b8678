package org.vgpu.simulator.input;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;

import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.Workload;
import org.vgpu.simulator.workload.WorkloadClass;
import org.vgpu.simulator.workload.WorkloadException;

/**
 * A log in the Standard Workload Format of the Parallel Workloads Archive: one job a line, 18 whitespace-separated
 * numbers, -1 where a value is missing, {@code ;} starting a header comment. Used fields: 1 job number, 2 submit
 * time, 3 wait time (its recorded start is submit + wait), 4 run time, 5 allocated and 8 requested processors, 9
 * requested time (its time limit), 11 status (5: cancelled), 12 user id. SWF counts processors, not GPUs: a job asks
 * ceil(processors / processors-per-GPU) GPUs, requested processors where given, else allocated ones, and as many
 * CPUs as processors. Submit time, run time and a processor count are needed; a job cancelled before it ran (status
 * 5, run time -1 or 0) is left out and counted. Without a requested time the time limit is the run time rounded up
 * to a whole minute; a job that ran past its requested time gets its run as its limit.
 */
public final class SwfReader {
    static final int FIELDS = 18;
    private static final String CANCELLED = "5";

    private final Path file;
    private final List<SimNode> nodes;
    private final NodeFit fit;
    private final int processorsPerGpu;
    private final Problems problems;
    private final Tally tally = new Tally("jobs");
    private final List<SimJob> jobs = new ArrayList<>();

    private SwfReader(Path file, List<SimNode> nodes, int processorsPerGpu) {
        if (processorsPerGpu < 1) {
            throw new IllegalArgumentException("processors per GPU must be 1 or more, got " + processorsPerGpu);
        }
        this.file = file;
        this.nodes = List.copyOf(nodes);
        this.fit = new NodeFit(nodes);
        this.processorsPerGpu = processorsPerGpu;
        this.problems = new Problems(file);
    }

    /**
     * The jobs of {@code file} on {@code nodes}, each asking ceil(processors / {@code processorsPerGpu}) GPUs.
     *
     * @throws WorkloadException with every malformed line, or when no job is left to simulate
     * @throws IOException when the file cannot be read
     */
    public static LoadedWorkload read(Path file, List<SimNode> nodes, int processorsPerGpu)
            throws IOException, WorkloadException {
        return new SwfReader(file, nodes, processorsPerGpu).read();
    }

    private LoadedWorkload read() throws IOException, WorkloadException {
        try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String text;
            long number = 0;
            while ((text = reader.readLine()) != null) {
                number++;
                String line = text.strip();
                if (!line.isEmpty() && !line.startsWith(";")) {
                    line(number, line);
                }
            }
        }
        problems.throwIfAny();
        if (jobs.isEmpty()) {
            problems.ofFile("no job is left to simulate", "expected SWF lines of jobs that ran");
            problems.throwIfAny();
        }
        long origin = jobs.stream().mapToLong(SimJob::submitSecond).min().orElseThrow();
        List<SimJob> shifted = jobs.stream().map(job -> shift(job, origin)).toList();
        List<String> summary = new ArrayList<>(tally.lines());
        summary.add(String.format(
                Locale.ROOT,
                "each job asks ceil(processors / %d) GPUs and as many CPUs as processors",
                processorsPerGpu));
        return new LoadedWorkload(new Workload("swf " + file, nodes, shifted), summary);
    }

    private static SimJob shift(SimJob job, long origin) {
        return new SimJob(
                job.id(),
                job.submitSecond() - origin,
                job.gpus(),
                job.cpus(),
                job.timeLimitSeconds(),
                job.runSeconds(),
                job.user(),
                job.workloadClass(),
                job.recordedStartSecond().isPresent()
                        ? OptionalLong.of(job.recordedStartSecond().getAsLong() - origin)
                        : OptionalLong.empty());
    }

    private void line(long number, String line) {
        String[] fields = line.split("\\s+");
        if (fields.length != FIELDS) {
            problems.at(
                    number,
                    fields.length + " fields",
                    "expected the " + FIELDS + " whitespace-separated fields"
                            + " of the Standard Workload Format, -1 for a missing one");
            return;
        }
        long[] values = new long[FIELDS];
        for (int i = 0; i < FIELDS; i++) {
            try {
                // Average CPU time (field 6) and memory are often fractional; none of the fields read here are.
                values[i] = Math.round(Double.parseDouble(fields[i]));
            } catch (NumberFormatException e) {
                problems.at(
                        number,
                        "field " + (i + 1) + " '" + fields[i] + "' is no number",
                        "expected a number, or -1 where the value is missing");
                return;
            }
        }
        String id = fields[0];
        long submit = values[1];
        long wait = values[2];
        long run = values[3];
        long processors = values[7] > 0 ? values[7] : values[4];
        long requested = values[8];
        if (fields[10].equals(CANCELLED) && run <= 0) {
            tally.skip("cancelled before they ran (status 5, no run time)");
            return;
        }
        List<String> missing = new ArrayList<>();
        if (submit < 0) {
            missing.add("submit time (field 2)");
        }
        if (run < 0) {
            missing.add("run time (field 4)");
        }
        if (processors < 1) {
            missing.add("processors (field 8 requested, or field 5 allocated)");
        }
        if (!missing.isEmpty()) {
            problems.at(
                    number,
                    "job " + id + " has no " + String.join(", no ", missing),
                    "expected each of them >= 0 (processors >= 1)");
            return;
        }
        long gpus = (processors + processorsPerGpu - 1) / processorsPerGpu;
        if (!fit.fits((int) Math.min(gpus, Integer.MAX_VALUE), (int) Math.min(processors, Integer.MAX_VALUE))) {
            tally.skip(NodeFit.TOO_BIG);
            return;
        }
        long limit;
        if (requested < 1) {
            limit = SlurmTimes.limitCovering(run);
            tally.adjust("had no requested time: their run rounded up to a whole minute taken as their limit");
        } else if (requested < run) {
            limit = run;
            tally.adjust("ran past their requested time: their run taken as their limit");
        } else {
            limit = requested;
        }
        jobs.add(new SimJob(
                id,
                submit,
                (int) gpus,
                (int) processors,
                limit,
                run,
                values[11] >= 0 ? "user" + values[11] : "",
                WorkloadClass.UNKNOWN,
                wait >= 0 ? OptionalLong.of(submit + wait) : OptionalLong.empty()));
        tally.keep();
    }
}
