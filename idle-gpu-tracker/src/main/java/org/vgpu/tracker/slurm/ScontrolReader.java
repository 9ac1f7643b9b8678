package org.vgpu.tracker.slurm;

import java.util.List;
import java.util.Optional;

/**
 * One form of {@code scontrol show node -d} and {@code scontrol show job -d} and its reader: the text
 * ({@link ScontrolText}) or the JSON of one data_parser version ({@link ScontrolJson}).
 * {@link ScontrolReaders#choose} picks the one for the Slurm it finds.
 */
public sealed interface ScontrolReader permits ScontrolText, ScontrolJson {
    /** The command line whose output {@link #nodes} reads. */
    List<String> showNodesCommand();

    /** The command line whose output {@link #jobs} reads: every job Slurm remembers, or the one given. */
    List<String> showJobsCommand(Optional<Long> job);

    /** @throws SlurmException when the output is not what this reader expects, saying what it expected */
    List<SlurmNode> nodes(String output);

    /** @throws SlurmException when the output is not what this reader expects, saying what it expected */
    List<SlurmJob> jobs(String output);

    /** For the log and messages: {@code scontrol's text}, {@code scontrol's JSON (data_parser v0.0.42)}. */
    String form();
}
