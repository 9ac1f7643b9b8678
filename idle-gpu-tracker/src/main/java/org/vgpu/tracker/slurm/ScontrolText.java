package org.vgpu.tracker.slurm;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The text of {@code scontrol show node -d} and {@code scontrol show job -d}, read by
 * {@link SlurmInventory#parseScontrolNodes} and {@link SlurmInventory#parseScontrolJobs}: the only form Slurm
 * releases before 23.02 print (they have no data_parser), and the one left where a Slurm offers no data_parser
 * version the tracker reads.
 */
public record ScontrolText() implements ScontrolReader {
    @Override
    public List<String> showNodesCommand() {
        return List.of("scontrol", "show", "node", "-d");
    }

    @Override
    public List<String> showJobsCommand(Optional<Long> job) {
        List<String> command = new ArrayList<>(List.of("scontrol", "show", "job", "-d"));
        job.ifPresent(id -> command.add(Long.toString(id)));
        return List.copyOf(command);
    }

    @Override
    public List<SlurmNode> nodes(String output) {
        return SlurmInventory.parseScontrolNodes(output);
    }

    @Override
    public List<SlurmJob> jobs(String output) {
        return SlurmInventory.parseScontrolJobs(output);
    }

    @Override
    public String form() {
        return "scontrol's text";
    }
}
