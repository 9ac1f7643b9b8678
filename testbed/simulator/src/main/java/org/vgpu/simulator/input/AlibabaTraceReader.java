package org.vgpu.simulator.input;

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
 * Alibaba's GPU cluster trace of 2023 (the "openb" trace: {@code nodes.csv} and {@code pods.csv} of one folder),
 * mapped onto Slurm's terms. Nodes: those with GPUs, their CPUs cpu_milli / 1000; the GPU model is not modelled.
 * Rows: a pod is a job submitted at creation_time that started at scheduled_time (its recorded start) and ran until
 * deletion_time, asking num_gpu GPUs and ceil(cpu_milli / 1000) CPUs. Left out and counted: pods without GPUs, pods
 * never scheduled, and pods that fit no node. A pod still running at the trace's end (deleted at the last deletion
 * time) is kept with its run cut there. A fractional pod (gpu_milli under 1000: it shared a GPU with others) either
 * takes one whole GPU, as Slurm without GPU sharing would give it, or is left out ({@link Fractional}). The trace
 * has no time limits: each pod's is its run rounded up to a whole minute, so backfill plans with nearly exact
 * run times.
 */
public final class AlibabaTraceReader {
    /** What becomes of a pod that asked a fraction of one GPU. */
    public enum Fractional {
        /** It takes one whole GPU. */
        WHOLE,
        /** It is left out. */
        SKIP
    }

    static final String NODES_HEADER = "sn,cpu_milli,memory_mib,gpu,model";
    static final String PODS_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
            + "creation_time,deletion_time,scheduled_time";

    private final Path dir;
    private final Fractional fractional;
    private final Tally nodeTally = new Tally("nodes");
    private final Tally podTally = new Tally("pods");

    private AlibabaTraceReader(Path dir, Fractional fractional) {
        this.dir = dir;
        this.fractional = fractional;
    }

    /**
     * The trace in {@code dir}.
     *
     * @throws WorkloadException with every malformed line of either file
     * @throws IOException when a file cannot be read
     */
    public static LoadedWorkload read(Path dir, Fractional fractional) throws IOException, WorkloadException {
        return new AlibabaTraceReader(dir, fractional).read();
    }

    private record Row(long line, List<String> fields) {}

    private LoadedWorkload read() throws IOException, WorkloadException {
        Path nodesFile = dir.resolve("nodes.csv");
        Path podsFile = dir.resolve("pods.csv");
        Problems nodeProblems = new Problems(nodesFile);
        Problems podProblems = new Problems(podsFile);
        List<SimNode> nodes = nodes(nodesFile, nodeProblems);
        List<Row> pods = rows(podsFile, PODS_HEADER, podProblems);
        long traceEnd = 0;
        for (Row pod : pods) {
            try {
                traceEnd = Math.max(traceEnd, Long.parseLong(pod.fields().get(9).strip()));
            } catch (NumberFormatException e) {
                // the pod's own check below reports it
            }
        }
        NodeFit fit = new NodeFit(nodes);
        List<SimJob> jobs = new ArrayList<>();
        int cutAtEnd = 0;
        for (Row pod : pods) {
            int before = podProblems.count();
            long cpuMilli = number(pod, 1, podProblems, false);
            long gpus = number(pod, 3, podProblems, false);
            long gpuMilli = number(pod, 4, podProblems, false);
            long created = number(pod, 8, podProblems, false);
            long deleted = number(pod, 9, podProblems, false);
            long scheduled = number(pod, 10, podProblems, true);
            if (podProblems.count() > before) {
                continue;
            }
            if (scheduled >= 0 && (scheduled < created || deleted < scheduled)) {
                podProblems.at(
                        pod.line(),
                        "creation, scheduled and deletion times are out of order",
                        "expected creation_time <= scheduled_time <= deletion_time");
                continue;
            }
            int cpus = (int) Math.max(1, Math.min(Integer.MAX_VALUE, (cpuMilli + 999) / 1000));
            if (gpus == 0) {
                podTally.skip("without GPUs (num_gpu 0)");
            } else if (scheduled < 0) {
                podTally.skip("never scheduled (no scheduled_time)");
            } else if (gpuMilli < 1000 && fractional == Fractional.SKIP) {
                podTally.skip("that asked a fraction of a GPU (gpu_milli under 1000)");
            } else if (!fit.fits((int) Math.min(gpus, Integer.MAX_VALUE), cpus)) {
                podTally.skip(NodeFit.TOO_BIG);
            } else {
                if (gpuMilli < 1000) {
                    podTally.adjust("asked a fraction of a GPU (gpu_milli under 1000) and take one whole GPU");
                }
                if (deleted == traceEnd && pod.fields().get(7).equals("Running")) {
                    cutAtEnd++;
                }
                long run = deleted - scheduled;
                jobs.add(new SimJob(
                        pod.fields().get(0),
                        created,
                        (int) gpus,
                        cpus,
                        SlurmTimes.limitCovering(run),
                        run,
                        "",
                        WorkloadClass.UNKNOWN,
                        OptionalLong.of(scheduled)));
                podTally.keep();
            }
        }
        Problems.throwIfAny(nodeProblems, podProblems);
        if (nodes.isEmpty() || jobs.isEmpty()) {
            podProblems.ofFile("no GPU node or no GPU pod that ran", "expected the trace's nodes.csv and pods.csv");
            podProblems.throwIfAny();
        }
        List<String> summary = new ArrayList<>(nodeTally.lines());
        summary.set(
                0,
                String.format(
                        Locale.ROOT,
                        "kept %,d nodes with %,d GPUs",
                        nodes.size(),
                        nodes.stream().mapToInt(SimNode::gpus).sum()));
        summary.addAll(podTally.lines());
        summary.add(String.format(
                Locale.ROOT,
                "%,d pods still running at the trace's end (%,d s) kept with their run" + " cut there",
                cutAtEnd,
                traceEnd));
        summary.add("time limits: each pod's run rounded up to a whole minute (the trace has none)");
        return new LoadedWorkload(new Workload("alibaba " + dir, nodes, jobs), summary);
    }

    private List<SimNode> nodes(Path file, Problems problems) throws IOException {
        List<SimNode> nodes = new ArrayList<>();
        for (Row row : rows(file, NODES_HEADER, problems)) {
            int before = problems.count();
            long cpuMilli = number(row, 1, problems, false);
            long gpus = number(row, 3, problems, false);
            if (problems.count() > before) {
                continue;
            }
            if (gpus == 0) {
                nodeTally.skip("without GPUs");
            } else {
                nodes.add(new SimNode(row.fields().get(0), (int) Math.min(gpus, Integer.MAX_VALUE), (int)
                        Math.max(1, Math.min(Integer.MAX_VALUE, cpuMilli / 1000))));
                nodeTally.keep();
            }
        }
        return nodes;
    }

    /** The rows of a CSV file after its header, which must be {@code header}. */
    private static List<Row> rows(Path file, String header, Problems problems) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        if (lines.isEmpty() || !lines.getFirst().strip().equals(header)) {
            problems.at(
                    1,
                    lines.isEmpty() ? "the file is empty" : "header '" + lines.getFirst() + "'",
                    "expected the trace's header " + header);
            return List.of();
        }
        int columns = header.split(",").length;
        List<Row> rows = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            if (lines.get(i).isBlank()) {
                continue;
            }
            String[] fields = lines.get(i).split(",", -1);
            if (fields.length != columns) {
                problems.at(
                        i + 1, fields.length + " fields", "expected " + columns + " as the header names: " + header);
            } else {
                rows.add(new Row(i + 1, List.of(fields)));
            }
        }
        return rows;
    }

    /** A whole number of at least 0 in column {@code index}; -1 when empty and {@code mayBeEmpty}. */
    private static long number(Row row, int index, Problems problems, boolean mayBeEmpty) {
        String value = row.fields().get(index).strip();
        if (value.isEmpty() && mayBeEmpty) {
            return -1;
        }
        try {
            long parsed = Long.parseLong(value);
            if (parsed >= 0 && parsed <= Integer.MAX_VALUE * 1000L) {
                return parsed;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        problems.at(
                row.line(),
                "column " + (index + 1) + " '" + value + "' is no whole number",
                "expected a whole number >= 0" + (mayBeEmpty ? ", or nothing" : ""));
        return 0;
    }
}
