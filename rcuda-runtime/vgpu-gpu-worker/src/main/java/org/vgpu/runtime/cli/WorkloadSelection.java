package org.vgpu.runtime.cli;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.apache.commons.cli.Option;
import org.apache.commons.cli.ParseException;

import org.vgpu.runtime.workloads.Workload;
import org.vgpu.runtime.workloads.Workloads;

/** The {@code --workload} option of the commands that run test workloads, so it reads the same in each. */
public final class WorkloadSelection {
    public static final String OPTION = "workload";
    private static final String ALL = "all";

    private WorkloadSelection() {}

    /** {@code --workload NAME[,NAME...]}, repeatable; {@code defaultText} says what runs without it. */
    public static Option option(String defaultText) {
        return Option.builder()
                .longOpt(OPTION)
                .hasArg()
                .argName("NAME[,NAME...]")
                .desc("workloads to run, repeatable (default " + defaultText + "): "
                        + String.join(", ", Workloads.names()) + ", or " + ALL)
                .get();
    }

    /**
     * The named workloads in the order given (comma lists and repeats allowed), "all" for every one,
     * or {@code absent} when the option was not given.
     */
    public static List<Workload> select(String[] values, List<Workload> absent) throws ParseException {
        if (values == null) {
            return absent;
        }
        Set<String> names = new LinkedHashSet<>();
        for (String value : values) {
            for (String name : value.split(",")) {
                if (!name.isBlank()) {
                    names.add(name.strip());
                }
            }
        }
        if (names.isEmpty()) {
            throw new ParseException("--" + OPTION + " needs a name, one of " + Workloads.names() + " or " + ALL);
        }
        if (names.contains(ALL)) {
            return Workloads.all();
        }
        List<Workload> selected = new ArrayList<>();
        for (String name : names) {
            selected.add(Workloads.named(name)
                    .orElseThrow(() -> new ParseException(
                            "unknown workload '" + name + "', expected one of " + Workloads.names() + " or " + ALL)));
        }
        return selected;
    }
}
