package org.vgpu.tracker;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

import org.vgpu.tracker.ledger.Assembly;

/**
 * What {@code vgpu report} shows of the tracker, as {@link Tracker#status()} found it: live
 * assemblies (with the holders Slurm shows ended), held jobs waiting with their reasons, and the
 * recently ended assemblies, oldest first. {@code TrackerProtocol} writes it as lines.
 */
public record StatusReport(List<Live> assemblies, List<Waiting> waiting, List<Ended> ended) {
    public StatusReport {
        assemblies = List.copyOf(assemblies);
        waiting = List.copyOf(waiting);
        ended = List.copyOf(ended);
    }

    /** A live assembly (the ledger's own record, which names no token) and its holders that Slurm shows ended. */
    public record Live(Assembly assembly, List<Long> lostHolders) {
        public Live {
            lostHolders = List.copyOf(lostHolders);
        }
    }

    /** A held vgpu job without an assembly, and why. */
    public record Waiting(long job, String user, int vgpus, String reason) {}

    /** An assembly that ended: {@code why} is done, gone, ended or aborted; an aborted one says what went wrong. */
    public record Ended(
            long job,
            String user,
            String node,
            int vgpus,
            int borrowed,
            String why,
            Instant at,
            Optional<String> reason) {}
}
