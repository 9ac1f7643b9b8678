package org.vgpu.tracker.slurm;

import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * The versions of Slurm's {@code data_parser} plugin, the JSON of {@code scontrol --json=VERSION show node/job -d},
 * that the tracker reads: those Slurm 24.11 offers. They agree on every field the tracker reads but one: where a
 * job's allocated nodes are listed, which {@link ScontrolJson} reads by the version's own shape.
 */
public enum DataParser {
    /** Slurm 23.11 to 24.11: a job's nodes are {@code job_resources.allocated_nodes[].nodename}. */
    V0_0_40("v0.0.40", AllocatedNodes.LIST_OF_NODENAMES),
    /** Slurm 24.05 to 25.05: a job's nodes are {@code job_resources.nodes.allocation[].name}. */
    V0_0_41("v0.0.41", AllocatedNodes.ALLOCATION_OBJECTS),
    /** Slurm 24.11 to 25.11: as v0.0.41. */
    V0_0_42("v0.0.42", AllocatedNodes.ALLOCATION_OBJECTS);

    /** How a version lists the nodes of a job's allocation inside {@code job_resources}. */
    enum AllocatedNodes {
        /** {@code {"allocated_nodes": [{"nodename": "n1", ...}]}} */
        LIST_OF_NODENAMES,
        /** {@code {"nodes": {"allocation": [{"name": "n1", ...}]}}} */
        ALLOCATION_OBJECTS
    }

    private final String version;
    private final AllocatedNodes allocatedNodes;

    DataParser(String version, AllocatedNodes allocatedNodes) {
        this.version = version;
        this.allocatedNodes = allocatedNodes;
    }

    /** As Slurm names it after {@code --json=}: {@code v0.0.42}. */
    public String version() {
        return version;
    }

    /** As a document's {@code meta.plugin.data_parser} names it: {@code data_parser/v0.0.42}. */
    public String pluginName() {
        return "data_parser/" + version;
    }

    AllocatedNodes allocatedNodes() {
        return allocatedNodes;
    }

    /** The versions this tracker reads, as Slurm names them, oldest first: for messages. */
    public static List<String> known() {
        return Stream.of(values()).map(DataParser::version).toList();
    }

    /**
     * The newest version both this tracker reads and Slurm offers; empty when they share none.
     *
     * @param offered what {@code scontrol --json=list} lists, each {@code data_parser/v0.0.42} or {@code v0.0.42}
     */
    public static Optional<DataParser> newestOf(Collection<String> offered) {
        return Stream.of(values())
                .filter(parser -> offered.contains(parser.version()) || offered.contains(parser.pluginName()))
                .max(Comparator.naturalOrder());
    }
}
