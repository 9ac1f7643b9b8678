package org.vgpu.simulator.engine;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.vgpu.simulator.workload.WorkloadClass;

/**
 * What borrowing costs a job in the simulation, each figure with the measurement it comes from: how much slower a
 * job runs while some of its vGPUs are remote (per workload class), how long a move home blocks it, how long the
 * hook takes to notice a freed GPU and how long a borrowing job takes to start. Immutable; {@link #with} gives a
 * copy with one figure overridden.
 */
public final class OverheadModel {
    /** Multiplies a job's run time while any of its vGPUs is remote; one key per workload class. */
    private static final String SLOWDOWN = "slowdown.";
    /** The live state a vGPU of the class carries, which a move home copies; one key per workload class. */
    private static final String STATE = "state-gib.";

    public static final String MIGRATION_SECONDS_PER_GIB = "migration-seconds-per-gib";
    public static final String MIGRATION_FIXED_SECONDS = "migration-fixed-seconds";
    public static final String HOOK_LATENCY_SECONDS = "hook-latency-seconds";
    public static final String STARTUP_SECONDS = "startup-seconds";

    private record Parameter(double value, String unit, String source, double minimum) {}

    private static final Map<String, Parameter> MEASURED = measuredParameters();

    private final Map<String, Parameter> parameters;

    private OverheadModel(Map<String, Parameter> parameters) {
        this.parameters = parameters;
    }

    /** The project's own measured figures. */
    public static OverheadModel measured() {
        return new OverheadModel(MEASURED);
    }

    /** Every key {@link #with} accepts, in the order {@link #describe} lists them. */
    public static List<String> keys() {
        return List.copyOf(MEASURED.keySet());
    }

    /** The key of a workload class's slowdown while remote. */
    public static String slowdownKey(WorkloadClass workloadClass) {
        return SLOWDOWN + className(workloadClass);
    }

    /** The key of a workload class's live state per vGPU. */
    public static String stateKey(WorkloadClass workloadClass) {
        return STATE + className(workloadClass);
    }

    /**
     * This model with {@code key} set to {@code value}.
     *
     * @throws IllegalArgumentException for a key not in {@link #keys()}, a value that is not a number, or one out of
     *     the key's range (negative, a slowdown below 1)
     */
    public OverheadModel with(String key, String value) {
        Parameter current = parameters.get(key);
        if (current == null) {
            throw new IllegalArgumentException(
                    "unknown overhead parameter '" + key + "'; known: " + String.join(", ", keys()));
        }
        double parsed;
        try {
            parsed = Double.parseDouble(value.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "overhead parameter " + key + ": '" + value + "' is not a number of " + current.unit(), e);
        }
        if (!Double.isFinite(parsed) || parsed < current.minimum()) {
            throw new IllegalArgumentException(
                    "overhead parameter " + key + ": " + value + " is out of range; it needs a" + " finite number of "
                            + current.unit() + " >= " + format(current.minimum()));
        }
        Map<String, Parameter> changed = new LinkedHashMap<>(parameters);
        changed.put(key, new Parameter(parsed, current.unit(), "set on the command line", current.minimum()));
        return new OverheadModel(java.util.Collections.unmodifiableMap(changed));
    }

    /**
     * The same model with every overhead zero: no slowdown while remote, moves that block nothing, a hook that sees
     * at once and jobs that start at once. The upper bound of what borrowing can give.
     */
    public OverheadModel free() {
        Map<String, Parameter> changed = new LinkedHashMap<>(parameters);
        for (Map.Entry<String, Parameter> entry : parameters.entrySet()) {
            if (!entry.getKey().startsWith(STATE)) {
                Parameter parameter = entry.getValue();
                changed.put(
                        entry.getKey(),
                        new Parameter(parameter.minimum(), parameter.unit(), "no overhead", parameter.minimum()));
            }
        }
        return new OverheadModel(java.util.Collections.unmodifiableMap(changed));
    }

    /** One line per parameter: key, value, unit and where the value comes from. */
    public List<String> describe() {
        List<String> lines = new ArrayList<>();
        parameters.forEach((key, parameter) -> lines.add(
                key + " = " + format(parameter.value()) + " " + parameter.unit() + "  (" + parameter.source() + ")"));
        return lines;
    }

    /** How many times longer a job of the class runs while any of its vGPUs is remote (1 = no slower). */
    public double slowdown(WorkloadClass workloadClass) {
        return value(slowdownKey(workloadClass));
    }

    /** How long moving one vGPU of the class home blocks its job, in seconds. */
    public double migrationBlockedSeconds(WorkloadClass workloadClass) {
        return value(MIGRATION_FIXED_SECONDS) + value(MIGRATION_SECONDS_PER_GIB) * stateGib(workloadClass);
    }

    /** The live state one vGPU of the class carries, in GiB. */
    public double stateGib(WorkloadClass workloadClass) {
        return value(stateKey(workloadClass));
    }

    /** From a GPU freed on a job's node to the hook's decision, in seconds. */
    public double hookLatencySeconds() {
        return value(HOOK_LATENCY_SECONDS);
    }

    /** From the tracker's plan to a borrowing job running (holders and workers started), in seconds. */
    public double startupSeconds() {
        return value(STARTUP_SECONDS);
    }

    private double value(String key) {
        return parameters.get(key).value();
    }

    private static String className(WorkloadClass workloadClass) {
        return workloadClass.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static String format(double value) {
        return value == Math.rint(value) && Math.abs(value) < 1e15
                ? Long.toString((long) value)
                : String.format(Locale.ROOT, "%.4g", value);
    }

    private static Map<String, Parameter> measuredParameters() {
        String md = "the MD app all-remote vs native on the H200, 1,776 vs 1,024 ms for 40,200 launches"
                + " (2026-11-29); 1,909 vs 1,037 ms, 1.84x, on 2026-11-30 (docs/migration-bench.md)";
        Map<String, Parameter> parameters = new LinkedHashMap<>();
        for (WorkloadClass workloadClass : WorkloadClass.values()) {
            parameters.put(
                    slowdownKey(workloadClass),
                    switch (workloadClass) {
                        case MOLECULAR_DYNAMICS -> new Parameter(1.73, "x", md, 1);
                        case COMPUTE_BOUND ->
                            new Parameter(
                                    1.05,
                                    "x",
                                    "assumed: long kernels cross to the worker once per launch; no benchmark of its own yet",
                                    1);
                        case TRAINING ->
                            new Parameter(
                                    1.83,
                                    "x",
                                    "PyTorch CNN step on a remote vGPU 1.94 vs native 1.06, ratio of medians (MLP: 2.66 vs"
                                            + " 1.34); docs/libcuda.md, 2026-11-30",
                                    1);
                        case UNKNOWN -> new Parameter(1.73, "x", "priced like the MD app: " + md, 1);
                    });
        }
        for (WorkloadClass workloadClass : WorkloadClass.values()) {
            double gib = switch (workloadClass) {
                case MOLECULAR_DYNAMICS -> 1;
                case COMPUTE_BOUND -> 8;
                case TRAINING -> 16;
                case UNKNOWN -> 4;
            };
            parameters.put(
                    stateKey(workloadClass),
                    new Parameter(gib, "GiB", "assumed live state per vGPU; no trace says it", 0));
        }
        parameters.put(
                MIGRATION_SECONDS_PER_GIB,
                new Parameter(
                        0.30,
                        "s/GiB",
                        "a move home blocked the app 321-415 ms for 1 GiB and 1,843-2,147 ms for 8 GiB, 0.23-0.30 s"
                                + " per GiB, the upper figure; docs/two-gpus.md, 2026-11-28",
                        0));
        parameters.put(
                MIGRATION_FIXED_SECONDS,
                new Parameter(
                        0.025,
                        "s",
                        "a move of a small state (22,000 bytes) blocked the MD app 20.6 ms, docs/two-gpus.md,"
                                + " 2026-11-28; 20-25 ms over the runs, the upper figure",
                        0));
        parameters.put(
                HOOK_LATENCY_SECONDS,
                new Parameter(
                        1,
                        "s",
                        "release -> first migration start 1.06 s in the borrowing story on the Slurm testbed"
                                + " (docs/story.md, 2026-11-25; an upper bound, the tracker's log read every 0.5 s)",
                        0));
        parameters.put(
                STARTUP_SECONDS,
                new Parameter(
                        9,
                        "s",
                        "the borrowing job of docs/story.md (two vGPUs borrowed) started 7 s after its submission on the"
                                + " Slurm testbed (docs/story.md, 2026-11-25); 2 s more assumed for busier lenders",
                        0));
        return java.util.Collections.unmodifiableMap(parameters);
    }
}
