package org.vgpu.tracker.placement;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.siteconfig.Distances;
import org.vgpu.siteconfig.Policy;
import org.vgpu.tracker.slurm.SlurmJob;

/**
 * Plans the assembly of one held vgpu job: the node it runs on, how many of that node's idle GPUs
 * it gets, and which other nodes lend it the rest.
 *
 * <ol>
 * <li>A node of the job's partition with enough idle GPUs of its own wins; among those the one
 * with the fewest idle GPUs, so larger holes stay for larger jobs (best fit).</li>
 * <li>Otherwise, with borrowing on, the node with the most idle GPUs that can be topped up with at
 * most {@code max_borrowed_per_job} GPUs lent by other nodes of the lend partition. Only GPUs idle
 * for the grace period are lent, so Slurm's own scheduler gets the first pick of a freed GPU.
 * Lenders are chosen nearest first (site distances), then least lent in this pass (spread the
 * load), then most GPU memory, then by name, so plans are reproducible.</li>
 * </ol>
 * Every node used needs free CPUs: the job's on its own node, one per holder job on a lender.
 */
public final class AssemblyPlanner {
    private final Policy policy;
    private final Distances distances;
    private final String lendPartition;

    public AssemblyPlanner(Policy policy, Distances distances, String lendPartition) {
        this.policy = Objects.requireNonNull(policy, "policy");
        this.distances = Objects.requireNonNull(distances, "distances");
        this.lendPartition = Objects.requireNonNull(lendPartition, "lendPartition");
    }

    /** Plans {@code job} and, when it gets a plan, takes what the plan uses from {@code free}. */
    public Placement plan(SlurmJob job, Availability free) {
        int vgpus = job.requestedPerNode().getOrDefault(SlurmJob.VGPU, 0);
        if (vgpus < 1) {
            return new Placement.Wait(job.id(), "does not ask for vgpu");
        }
        int alsoGpus = job.requestedPerNode().getOrDefault(SlurmJob.GPU, 0);
        if (alsoGpus > 0) {
            return new Placement.Wait(
                    job.id(),
                    "asks for gpu:" + alsoGpus + " as well as vgpu:" + vgpus
                            + "; a vgpu job gets its GPUs from the tracker, ask for --gres=vgpu:" + (vgpus + alsoGpus)
                            + " alone");
        }
        List<Availability.Node> hosts = free.nodes().stream()
                .filter(node ->
                        node.view().schedulable() && node.view().partitions().contains(job.partition()))
                .filter(node -> node.cpus() >= job.cpus() && node.vgpus() >= vgpus)
                .toList();
        if (hosts.isEmpty()) {
            return new Placement.Wait(
                    job.id(),
                    "no node of partition " + job.partition() + " has " + job.cpus() + " free CPU(s) and " + vgpus
                            + " free vgpu slot(s)");
        }
        Optional<Availability.Node> wholeNode = hosts.stream()
                .filter(node -> node.gpus() >= vgpus)
                .min(Comparator.comparingInt(Availability.Node::gpus)
                        .thenComparing(node -> node.view().name()));
        if (wholeNode.isPresent()) {
            return take(job, vgpus, wholeNode.get(), List.of());
        }
        List<Availability.Node> byLocalGpus = hosts.stream()
                .sorted(Comparator.comparingInt(Availability.Node::gpus)
                        .reversed()
                        .thenComparing(node -> node.view().name()))
                .toList();
        Availability.Node mostIdle = byLocalGpus.getFirst();
        if (!policy.borrowing()) {
            return new Placement.Wait(
                    job.id(),
                    "waiting for a node with " + vgpus + " idle GPUs (most now: " + mostIdle.gpus() + " on "
                            + mostIdle.view().name() + "); borrowing is off");
        }
        // What all lenders together can lend: a host whose shortfall exceeds it less its own share gets no
        // lenders, known without scanning every node for each host (which made a refused plan quadratic in nodes).
        int lendableEverywhere = free.nodes().stream()
                .filter(this::canLend)
                .mapToInt(AssemblyPlanner::lendable)
                .sum();
        for (Availability.Node host : byLocalGpus) {
            int borrow = vgpus - host.gpus();
            int lendableElsewhere = lendableEverywhere - (canLend(host) ? lendable(host) : 0);
            if (borrow > policy.maxBorrowedPerJob() || borrow > lendableElsewhere) {
                continue;
            }
            Optional<List<Availability.Node>> lenders = lenders(host, borrow, free);
            if (lenders.isPresent()) {
                return take(job, host.gpus(), host, lenders.get());
            }
        }
        int lendable = lendableEverywhere - (canLend(mostIdle) ? lendable(mostIdle) : 0);
        return new Placement.Wait(
                job.id(),
                "waiting for " + vgpus + " GPUs: most idle node "
                        + mostIdle.view().name()
                        + " has " + mostIdle.gpus() + ", other nodes can lend " + lendable + " (idle for "
                        + policy.idleGrace().toSeconds() + "s, with a free CPU), a job may borrow at most "
                        + policy.maxBorrowedPerJob());
    }

    /** One lender per borrowed GPU, or empty when too few GPUs can be lent to jobs on {@code host}. */
    private Optional<List<Availability.Node>> lenders(Availability.Node host, int borrow, Availability free) {
        List<Availability.Node> chosen = new ArrayList<>();
        for (int i = 0; i < borrow; i++) {
            Optional<Availability.Node> next = free.nodes().stream()
                    .filter(node -> node != host && canLend(node))
                    .filter(node -> lendable(node) > countOf(chosen, node))
                    .min(Comparator.<Availability.Node>comparingInt(node -> distances.between(
                                    host.view().name(), node.view().name()))
                            .thenComparingInt(node -> node.lent() + countOf(chosen, node))
                            .thenComparing(node -> node.view().gpuMemoryBytes(), Comparator.reverseOrder())
                            .thenComparing(node -> node.view().name()));
            if (next.isEmpty()) {
                return Optional.empty();
            }
            chosen.add(next.get());
        }
        return Optional.of(chosen);
    }

    private boolean canLend(Availability.Node node) {
        return node.view().schedulable() && node.view().partitions().contains(lendPartition);
    }

    /** GPUs {@code node} can lend: idle past the grace, each with a free CPU for its holder job. */
    private static int lendable(Availability.Node node) {
        return Math.min(node.lendableGpus(), node.cpus());
    }

    private static int countOf(List<Availability.Node> chosen, Availability.Node node) {
        return (int) chosen.stream().filter(candidate -> candidate == node).count();
    }

    private static Placement take(
            SlurmJob job, int localGpus, Availability.Node host, List<Availability.Node> lenders) {
        int vgpus = localGpus + lenders.size();
        host.takeForJob(localGpus, job.cpus(), vgpus);
        for (Availability.Node lender : lenders) {
            lender.takeForLend();
        }
        return new Placement.Plan(
                job.id(),
                host.view().name(),
                localGpus,
                lenders.stream().map(lender -> lender.view().name()).toList());
    }
}
