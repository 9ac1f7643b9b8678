package org.vgpu.simulator.input;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.simulator.workload.SimNode;

/**
 * The nodes of a cluster as {@code --cluster} gives them, for inputs that do not list them (sacct does not say how
 * many GPUs a node has, SWF and the generator say nothing of nodes). Groups joined by {@code +}, each either
 * {@code COUNTxGPUS[xCPUS]} (COUNT nodes named n1, n2, ... of GPUS GPUs) or {@code NAME[FIRST-LAST]:GPUS[:CPUS]} /
 * {@code NAME:GPUS[:CPUS]} (Slurm's host list notation, zero padding kept). Without a CPU count, CPUs do not limit
 * where jobs go: the node gets {@value #UNCONSTRAINED_CPUS}.
 */
public final class ClusterSpec {
    /** CPUs of a node whose count the spec does not give: more than any job asks. */
    public static final int UNCONSTRAINED_CPUS = 1_000_000;

    public static final String FORMAT = "COUNTxGPUS[xCPUS] or NAME[FIRST-LAST]:GPUS[:CPUS], groups joined by +"
            + " (e.g. 12x4, 8x8x64+4x4, gpu[01-12]:4)";

    private static final Pattern COUNTED = Pattern.compile("(\\d+)x(\\d+)(?:x(\\d+))?");
    private static final Pattern NAMED = Pattern.compile("([A-Za-z0-9_.-]+)(?:\\[(\\d+)-(\\d+)])?:(\\d+)(?::(\\d+))?");
    private static final int MAX_NODES = 1_000_000;

    private ClusterSpec() {}

    /** The nodes {@code spec} describes; an {@link IllegalArgumentException} says what is wrong with it. */
    public static List<SimNode> parse(String spec) {
        List<SimNode> nodes = new ArrayList<>();
        for (String group : spec.strip().split("\\+", -1)) {
            String text = group.strip();
            Matcher counted = COUNTED.matcher(text);
            Matcher named = NAMED.matcher(text);
            if (counted.matches()) {
                int count = number(counted.group(1), text);
                int gpus = number(counted.group(2), text);
                int cpus = counted.group(3) == null ? UNCONSTRAINED_CPUS : number(counted.group(3), text);
                int first = nodes.size() + 1;
                for (int i = 0; i < count; i++) {
                    nodes.add(node("n" + (first + i), gpus, cpus, text));
                    checkSize(nodes);
                }
            } else if (named.matches()) {
                int gpus = number(named.group(4), text);
                int cpus = named.group(5) == null ? UNCONSTRAINED_CPUS : number(named.group(5), text);
                if (named.group(2) == null) {
                    nodes.add(node(named.group(1), gpus, cpus, text));
                } else {
                    String from = named.group(2);
                    int first = number(from, text);
                    int last = number(named.group(3), text);
                    if (last < first) {
                        throw new IllegalArgumentException(
                                "--cluster: '" + text + "' counts down from " + first + " to " + last);
                    }
                    String pad = from.startsWith("0") ? "%0" + from.length() + "d" : "%d";
                    for (int i = first; i <= last; i++) {
                        nodes.add(node(named.group(1) + String.format(pad, i), gpus, cpus, text));
                        checkSize(nodes);
                    }
                }
            } else {
                throw new IllegalArgumentException("--cluster: '" + text + "' is not a node group; expected " + FORMAT);
            }
        }
        Set<String> names = new HashSet<>();
        for (SimNode node : nodes) {
            if (!names.add(node.name())) {
                throw new IllegalArgumentException("--cluster: node " + node.name() + " is given twice");
            }
        }
        if (nodes.stream().allMatch(node -> node.gpus() == 0)) {
            throw new IllegalArgumentException("--cluster: '" + spec + "' has no GPU; expected " + FORMAT);
        }
        return List.copyOf(nodes);
    }

    private static SimNode node(String name, int gpus, int cpus, String group) {
        if (cpus < 1) {
            throw new IllegalArgumentException(
                    "--cluster: '" + group + "' gives a node no CPU; a node needs 1 or more");
        }
        return new SimNode(name, gpus, cpus);
    }

    private static void checkSize(List<SimNode> nodes) {
        if (nodes.size() > MAX_NODES) {
            throw new IllegalArgumentException(
                    "--cluster: more than " + MAX_NODES + " nodes; the simulator takes" + " at most that many");
        }
    }

    private static int number(String digits, String group) {
        try {
            return Integer.parseInt(digits);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--cluster: " + digits + " in '" + group + "' is too large");
        }
    }
}
