package org.vgpu.tracker.hook;

import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

import org.vgpu.common.agent.AgentChannel;

/**
 * Commands waiting for the jobs' migration agents, one at most per job. An agent's poll waits here
 * (without the tracker's lock, on the virtual thread of its connection) until a command for its job
 * is queued or the hold time passes. A command is handed to exactly one poll: it is not sent twice,
 * because the agent may have acted on it; the tracker learns what happened from the agent's
 * {@code done} or, failing that, from where its next polls say the vGPU runs.
 *
 * <p>A job may have several agents at once: a step that runs several tasks on the node gives each task its share of
 * the job's vGPUs (vgpu run, {@code VGPU_TASK_VGPUS}), and each task's agent polls for its share. An agent is named by
 * the vGPU its credential speaks for ({@link Agent}), and an order for vGPU k goes to the agent that speaks for k:
 * the one that polled most recently among those whose polls report k, else (no poll reported k yet) the job's agent
 * that polled most recently. With one agent per job, as a step of one task has, that is every order.
 *
 * <p>Only an agent's newest poll takes its orders. A poll is held on a connection that nobody reads while it waits:
 * when the agent's process ends (a job step's {@code vgpu run} exits, or is killed) its held poll stays until the hold
 * time passes, and an order handed to it would be lost. The next step's agent polls anew, which makes the dead poll an
 * older one. When no poll is held, {@link #silentFor} says for how long none was, so that the tracker does not start
 * a move for an agent that has gone. An agent that says so when it stops ({@code agent bye}) is gone at once:
 * {@link #left}.
 */
public final class AgentMailbox {
    /** A migration for a job's agent: move {@code vgpu} to {@code target} (a GPU of its node, or another worker). */
    public record Order(long id, int vgpu, AgentChannel.Target target) {
        public Order {
            Objects.requireNonNull(target, "target");
        }
    }

    /**
     * A job's agent as its poll shows it: the vGPU its credential speaks for, which names it among the job's agents,
     * and the vGPUs its poll reports (its task's share).
     */
    public record Agent(int credentialVgpu, Set<Integer> vgpus) {
        public Agent {
            Set<Integer> all = new HashSet<>(vgpus);
            all.add(credentialVgpu);
            vgpus = Set.copyOf(all);
        }

        /** The agent of {@code credential}, speaking for the vGPUs its poll reports. */
        public static Agent of(AgentChannel.Credential credential, List<AgentChannel.Stat> stats) {
            Set<Integer> reported = new HashSet<>();
            stats.forEach(stat -> reported.add(stat.vgpu()));
            return new Agent(credential.vgpu(), reported);
        }
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<Long, Order> pending = new HashMap<>();
    /** Agents whose held poll is to end now without a command, so they report afresh. */
    private final Map<Long, Set<Integer>> nudged = new HashMap<>();
    /** Jobs nudged before any agent of theirs polled: the first poll of each of their agents ends at once. */
    private final Set<Long> nudgedBeforeAnyPoll = new HashSet<>();
    /** Each job's agents, by the vGPU their credential speaks for, once they polled. */
    private final Map<Long, Map<Integer, Polls>> polls = new HashMap<>();
    /** Numbers the polls of all agents, so that "polled most recently" compares agents. */
    private long pollsBegun;

    private final LongSupplier nanoTime;

    /** An agent's polls: what it speaks for, its newest poll's number, how many are held, when one last ended. */
    private static final class Polls {
        Set<Integer> vgpus = Set.of();
        long newest;
        long lastBegun;
        int held;
        long lastEnded;
        boolean left;
    }

    public AgentMailbox() {
        this(System::nanoTime);
    }

    /** @param nanoTime the clock of {@link #silentFor} (tests give their own) */
    AgentMailbox(LongSupplier nanoTime) {
        this.nanoTime = Objects.requireNonNull(nanoTime, "nanoTime");
    }

    /** Queues {@code order} for job {@code job}'s agent, replacing one not taken yet, and wakes its held poll. */
    public void post(long job, Order order) {
        Objects.requireNonNull(order, "order");
        lock.lock();
        try {
            pending.put(job, order);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Ends the held polls of {@code job}'s agents now with no command (or their next ones, when none is held), so that
     * they poll again at once with fresh figures: a GPU just freed on its node is decided on today's counters, not
     * those of up to a hold time ago.
     */
    public void nudge(long job) {
        lock.lock();
        try {
            Map<Integer, Polls> agents = polls.get(job);
            if (agents == null || agents.isEmpty()) {
                nudgedBeforeAnyPoll.add(job);
            } else {
                nudged.computeIfAbsent(job, ignored -> new HashSet<>()).addAll(agents.keySet());
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Takes back migration {@code id} if no poll took it yet; true when it was still waiting. */
    public boolean withdraw(long job, long id) {
        lock.lock();
        try {
            Order order = pending.get(job);
            if (order != null && order.id() == id) {
                pending.remove(job);
                return true;
            }
            return false;
        } finally {
            lock.unlock();
        }
    }

    /** Whether an order for {@code job} waits for its agent. */
    public boolean waiting(long job) {
        lock.lock();
        try {
            return pending.containsKey(job);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits up to {@code hold} for an order for {@code job} that {@code agent} speaks for, and takes it; empty when
     * none came, or when a newer poll of the same agent came meanwhile (this one's process has gone, or polls again).
     *
     * @throws InterruptedException when the poll's thread is interrupted (the tracker stopping)
     */
    public Optional<Order> take(long job, Agent agent, Duration hold) throws InterruptedException {
        Objects.requireNonNull(agent, "agent");
        long nanos = hold.toNanos();
        lock.lock();
        Polls mine = polls.computeIfAbsent(job, ignored -> new HashMap<>())
                .computeIfAbsent(agent.credentialVgpu(), ignored -> new Polls());
        long ticket = ++mine.newest;
        mine.lastBegun = ++pollsBegun;
        mine.vgpus = agent.vgpus();
        mine.held++;
        mine.left = false;
        if (nudgedBeforeAnyPoll.remove(job)) {
            nudged.computeIfAbsent(job, ignored -> new HashSet<>())
                    .addAll(polls.get(job).keySet());
        }
        // An older poll of the agent still held ends now: its process polls anew, or has gone.
        changed.signalAll();
        try {
            while (!(ticket == mine.newest
                    && pending.containsKey(job)
                    && speaker(job, pending.get(job).vgpu()) == mine)) {
                if (nanos <= 0 || ticket != mine.newest || nudgeTaken(job, agent.credentialVgpu())) {
                    return Optional.empty();
                }
                nanos = changed.awaitNanos(nanos);
            }
            nudgeTaken(job, agent.credentialVgpu());
            return Optional.of(pending.remove(job));
        } finally {
            mine.held--;
            mine.lastEnded = nanoTime.getAsLong();
            changed.signalAll();
            lock.unlock();
        }
    }

    /** Whether {@code agent} of {@code job} was nudged, clearing it. Under the lock. */
    private boolean nudgeTaken(long job, int agent) {
        Set<Integer> agents = nudged.get(job);
        return agents != null && agents.remove(agent);
    }

    /**
     * The agent of {@code job} that speaks for vGPU {@code vgpu}: among those whose polls report it, the one that
     * polled most recently; when none does, the job's agent that polled most recently; null when none polled. Under
     * the lock.
     */
    private Polls speaker(long job, int vgpu) {
        Map<Integer, Polls> agents = polls.get(job);
        if (agents == null) {
            return null;
        }
        Comparator<Polls> byLastPoll = Comparator.comparingLong(agent -> agent.lastBegun);
        return agents.values().stream()
                .filter(agent -> agent.vgpus.contains(vgpu))
                .max(byLastPoll)
                .orElseGet(() -> agents.values().stream().max(byLastPoll).orElse(null));
    }

    /**
     * How long the agent that speaks for vGPU {@code vgpu} of {@code job} has not polled: empty while a poll of it is
     * held, or when no agent of the job polled (its app has not started its agent yet, or this tracker started since).
     */
    public Optional<Duration> silentFor(long job, int vgpu) {
        lock.lock();
        try {
            Polls its = speaker(job, vgpu);
            return its == null || its.held > 0
                    ? Optional.empty()
                    : Optional.of(Duration.ofNanos(nanoTime.getAsLong() - its.lastEnded));
        } finally {
            lock.unlock();
        }
    }

    /**
     * The agent of {@code job} whose credential speaks for {@code credentialVgpu} said it stops: its held poll, if the
     * tracker still holds one, ends now (as a newer poll would end it), and {@link #left} holds for the vGPUs it spoke
     * for until it polls again.
     */
    public void leave(long job, int credentialVgpu) {
        lock.lock();
        try {
            Polls its = polls.computeIfAbsent(job, ignored -> new HashMap<>())
                    .computeIfAbsent(credentialVgpu, ignored -> new Polls());
            its.newest++;
            its.left = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Whether the agent that speaks for vGPU {@code vgpu} of {@code job} said it stops and has not polled since. */
    public boolean left(long job, int vgpu) {
        lock.lock();
        try {
            Polls its = speaker(job, vgpu);
            return its != null && its.left;
        } finally {
            lock.unlock();
        }
    }

    /** The vGPUs the agent whose credential speaks for {@code credentialVgpu} reported in its last poll. */
    public Set<Integer> spokenFor(long job, int credentialVgpu) {
        lock.lock();
        try {
            Polls its = polls.getOrDefault(job, Map.of()).get(credentialVgpu);
            return its == null ? Set.of(credentialVgpu) : its.vgpus;
        } finally {
            lock.unlock();
        }
    }

    /** Drops whatever waits for {@code job} (its assembly ended). */
    public void clear(long job) {
        lock.lock();
        try {
            pending.remove(job);
            nudged.remove(job);
            nudgedBeforeAnyPoll.remove(job);
            polls.remove(job);
        } finally {
            lock.unlock();
        }
    }
}
