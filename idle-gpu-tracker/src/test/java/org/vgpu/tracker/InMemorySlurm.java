package org.vgpu.tracker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.vgpu.tracker.slurm.GresItem;
import org.vgpu.tracker.slurm.HolderOutput;
import org.vgpu.tracker.slurm.JobTime;
import org.vgpu.tracker.slurm.SlurmControl;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;
import org.vgpu.tracker.slurm.SlurmNode;

/**
 * A small stand-in for Slurm for the tracker's unit tests: nodes with GPUs and CPUs, jobs that
 * {@link #schedule()} starts first-come when their node has the GPUs, and a log of every change
 * the tracker asked for. The real thing is exercised by the testbed's scenarios.
 *
 * <p>Thread-safe: a tracker daemon's tick, its socket's threads and the test itself may all reach it at once (as in
 * the integration tests' HookOnGpuTest), so every operation holds its lock, and {@link #actions} may be read while it grows.
 */
final class InMemorySlurm implements SlurmControl {
    private record Node(String name, int gpus, int cpus, List<String> partitions) {}

    private final Map<String, Node> nodes = new LinkedHashMap<>();
    private final Map<Long, SlurmJob> jobs = new LinkedHashMap<>();
    private final Set<String> partitions = new HashSet<>(Set.of("gpu", "lend"));
    final List<String> actions = new CopyOnWriteArrayList<>();
    /** When set, {@link #job} throws it: Slurm failing while the tracker answers a request. */
    volatile RuntimeException jobFailure;

    /** Run once right after the next {@link #inventory} is taken: a request that lands between a tick's look and its turn. */
    private Runnable afterNextLook;

    private long nextId = 100;
    /** What {@link #jobTime} says of each job; a job not here has run 100 s without a time limit. */
    final Map<Long, JobTime> times = new ConcurrentHashMap<>();

    synchronized void addNode(String name, int gpus, int cpus) {
        addNode(name, gpus, cpus, List.of("gpu", "lend"));
    }

    /** A node in only {@code partitions}: e.g. {@code lend} alone, a lender that runs no vgpu job itself. */
    synchronized void addNode(String name, int gpus, int cpus, List<String> partitions) {
        nodes.put(name, new Node(name, gpus, cpus, List.copyOf(partitions)));
    }

    /** A running job holding {@code gpuIndices} of {@code node}. */
    synchronized long runOn(String node, List<Integer> gpuIndices, int cpus) {
        long id = nextId++;
        jobs.put(
                id,
                new SlurmJob(
                        id,
                        "user-job",
                        "bob",
                        "RUNNING",
                        "None",
                        "gpu",
                        1,
                        cpus,
                        Map.of("gpu", gpuIndices.size()),
                        List.of(allocation(node, gpuIndices))));
        return id;
    }

    /** A vgpu job as job_submit.lua leaves it: pending, held. */
    synchronized long submitVgpuJob(int vgpus) {
        long id = nextId++;
        jobs.put(
                id,
                new SlurmJob(
                        id,
                        "vgpu-job",
                        "alice",
                        "PENDING",
                        "JobHeldUser",
                        "gpu",
                        0,
                        1,
                        Map.of("vgpu", vgpus),
                        List.of()));
        return id;
    }

    /** Slurm no longer lists the job: it ended longer ago than MinJobAge, or was purged. */
    synchronized void forget(long id) {
        jobs.remove(id);
    }

    synchronized void setState(long id, String state) {
        SlurmJob job = jobs.get(id);
        jobs.put(
                id,
                new SlurmJob(
                        id,
                        job.name(),
                        job.user(),
                        state,
                        job.reason(),
                        job.partition(),
                        job.priority(),
                        job.cpus(),
                        job.requestedPerNode(),
                        state.equals("RUNNING") ? job.allocations() : List.of()));
    }

    synchronized SlurmJob get(long id) {
        return jobs.get(id);
    }

    /** Starts every pending, released job whose pinned node has its GPUs free, lowest GPU indices first. */
    synchronized void schedule() {
        for (SlurmJob job : List.copyOf(jobs.values())) {
            if (!job.state().equals("PENDING")
                    || job.priority() == 0
                    || job.reason().equals("unpinned")) {
                continue;
            }
            String node = job.reason();
            int wanted = job.requestedPerNode().getOrDefault("gpu", 0);
            List<Integer> free = freeGpus(node);
            if (free.size() >= wanted) {
                jobs.put(
                        job.id(),
                        new SlurmJob(
                                job.id(),
                                job.name(),
                                job.user(),
                                "RUNNING",
                                "None",
                                job.partition(),
                                job.priority(),
                                job.cpus(),
                                job.requestedPerNode(),
                                List.of(allocation(node, free.subList(0, wanted)))));
            }
        }
    }

    synchronized List<Integer> freeGpus(String node) {
        Set<Integer> used = new HashSet<>();
        jobs.values().stream()
                .filter(job -> job.state().equals("RUNNING"))
                .forEach(job -> used.addAll(job.gpuIndicesOn(node)));
        List<Integer> free = new ArrayList<>();
        for (int gpu = 0; gpu < nodes.get(node).gpus(); gpu++) {
            if (!used.contains(gpu)) {
                free.add(gpu);
            }
        }
        return free;
    }

    synchronized List<Long> activeHolders() {
        return jobs.values().stream()
                .filter(job -> job.partition().equals("lend") && !job.state().equals("CANCELLED"))
                .map(SlurmJob::id)
                .toList();
    }

    @Override
    public SlurmInventory inventory() {
        SlurmInventory inventory;
        Runnable between;
        synchronized (this) {
            inventory = look();
            between = afterNextLook;
            afterNextLook = null;
        }
        // Outside the lock: what runs between may wait on a thread that asks this Slurm.
        if (between != null) {
            between.run();
        }
        return inventory;
    }

    private SlurmInventory look() {
        List<SlurmNode> views = new ArrayList<>();
        for (Node node : nodes.values()) {
            int usedGpus = node.gpus() - freeGpus(node.name()).size();
            int usedCpus = jobs.values().stream()
                    .filter(job -> job.state().equals("RUNNING")
                            && job.allocations().getFirst().nodes().equals(node.name()))
                    .mapToInt(SlurmJob::cpus)
                    .sum();
            views.add(new SlurmNode(
                    node.name(),
                    usedGpus == 0 ? "IDLE" : "MIXED",
                    node.cpus(),
                    usedCpus,
                    node.partitions(),
                    Map.of("gpu", node.gpus(), "vgpu", 8),
                    Map.of("gpu", usedGpus, "vgpu", 0)));
        }
        return new SlurmInventory(views, List.copyOf(jobs.values()));
    }

    /** {@code between} runs once, after the next look is taken and before its caller sees it. */
    synchronized void afterNextLook(Runnable between) {
        afterNextLook = between;
    }

    @Override
    public synchronized Optional<SlurmJob> job(long id) {
        if (jobFailure != null) {
            throw jobFailure;
        }
        return Optional.ofNullable(jobs.get(id));
    }

    @Override
    public synchronized boolean partitionExists(String partition) {
        return partitions.contains(partition);
    }

    @Override
    public synchronized long submitHolder(String node, long forJob, int vgpu, String script) {
        long id = pendingLendJob(HOLDER_NAME_PREFIX + forJob + "-v" + vgpu, node);
        actions.add("submit holder " + id + " on " + node + " for " + forJob + " v" + vgpu + ": " + script);
        return id;
    }

    @Override
    public HolderOutput holderOutput() {
        return new HolderOutput("/var/log/vgpu/holder-%j.out");
    }

    @Override
    public synchronized long submitGrant(String node, long forJob, int vgpu) {
        long id = pendingLendJob(GRANT_NAME_PREFIX + forJob + "-v" + vgpu, node);
        actions.add("submit grant " + id + " on " + node + " for " + forJob + " v" + vgpu);
        return id;
    }

    /** A job of the lend partition asking for one GPU of {@code node}: pinned, not held; its reason carries the node for schedule(). */
    private long pendingLendJob(String name, String node) {
        long id = nextId++;
        jobs.put(id, new SlurmJob(id, name, "root", "PENDING", node, "lend", 1, 1, Map.of("gpu", 1), List.of()));
        return id;
    }

    @Override
    public synchronized Optional<JobTime> jobTime(long id) {
        if (!jobs.containsKey(id)) {
            return Optional.empty();
        }
        return Optional.of(times.getOrDefault(id, new JobTime(Duration.ofSeconds(100), Optional.empty())));
    }

    @Override
    public synchronized void cancel(Collection<Long> ids) {
        for (long id : ids) {
            if (jobs.containsKey(id)) {
                setState(id, "CANCELLED");
                actions.add("cancel " + id);
            }
        }
    }

    @Override
    public synchronized void pin(long id, String node, int localGpus, int vgpus) {
        SlurmJob job = jobs.get(id);
        Map<String, Integer> request = localGpus > 0 ? Map.of("gpu", localGpus, "vgpu", vgpus) : Map.of("vgpu", vgpus);
        jobs.put(
                id,
                new SlurmJob(
                        id,
                        job.name(),
                        job.user(),
                        job.state(),
                        node,
                        job.partition(),
                        job.priority(),
                        job.cpus(),
                        request,
                        job.allocations()));
        actions.add("pin " + id + " to " + node + " gpu:" + localGpus + ",vgpu:" + vgpus);
    }

    @Override
    public synchronized void release(long id) {
        SlurmJob job = jobs.get(id);
        jobs.put(
                id,
                new SlurmJob(
                        id,
                        job.name(),
                        job.user(),
                        job.state(),
                        job.reason(),
                        job.partition(),
                        1,
                        job.cpus(),
                        job.requestedPerNode(),
                        job.allocations()));
        actions.add("release " + id);
    }

    @Override
    public synchronized void comment(long id, String text) {
        actions.add("comment " + id + " " + text);
    }

    private static SlurmJob.NodeAllocation allocation(String node, List<Integer> gpus) {
        return new SlurmJob.NodeAllocation(
                node, gpus.isEmpty() ? List.of() : List.of(new GresItem("gpu", Optional.empty(), gpus.size(), gpus)));
    }
}
