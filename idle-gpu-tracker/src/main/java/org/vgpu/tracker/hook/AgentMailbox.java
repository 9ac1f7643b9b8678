package org.vgpu.tracker.hook;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
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
 * <p>Only a job's newest poll takes its orders. A poll is held on a connection that nobody reads while it waits: when
 * the agent's process ends (a job step's {@code vgpu run} exits, or is killed) its held poll stays until the hold time
 * passes, and an order handed to it would be lost. The next step's agent polls anew, which makes the dead poll an
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

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<Long, Order> pending = new HashMap<>();
    /** Jobs whose held poll is to end now without a command, so the agent reports afresh. */
    private final Set<Long> nudged = new HashSet<>();
    /** Each job's polls, once it polled. */
    private final Map<Long, Polls> polls = new HashMap<>();

    private final LongSupplier nanoTime;

    /** A job's polls: the newest one's number, how many are held now, when the last one ended, a bye since. */
    private static final class Polls {
        long newest;
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
     * Ends {@code job}'s held poll now with no command (or its next one, when none is held), so that its agent polls
     * again at once with fresh figures: a GPU just freed on its node is decided on today's counters, not those of
     * up to a hold time ago.
     */
    public void nudge(long job) {
        lock.lock();
        try {
            nudged.add(job);
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
     * Waits up to {@code hold} for an order for {@code job} and takes it; empty when none came, or when a newer poll of
     * the job came meanwhile (this one's agent has gone, or polls again).
     *
     * @throws InterruptedException when the poll's thread is interrupted (the tracker stopping)
     */
    public Optional<Order> take(long job, Duration hold) throws InterruptedException {
        long nanos = hold.toNanos();
        lock.lock();
        Polls mine = polls.computeIfAbsent(job, ignored -> new Polls());
        long ticket = ++mine.newest;
        mine.held++;
        mine.left = false;
        // An older poll of the job still held ends now: its agent polls anew, or has gone.
        changed.signalAll();
        try {
            while (!(pending.containsKey(job) && ticket == mine.newest)) {
                if (nanos <= 0 || ticket != mine.newest || nudged.remove(job)) {
                    return Optional.empty();
                }
                nanos = changed.awaitNanos(nanos);
            }
            nudged.remove(job);
            return Optional.of(pending.remove(job));
        } finally {
            mine.held--;
            mine.lastEnded = nanoTime.getAsLong();
            changed.signalAll();
            lock.unlock();
        }
    }

    /**
     * How long {@code job}'s agent has not polled: empty while a poll is held, or when it never polled (its app has
     * not started its agent yet, or this tracker started since).
     */
    public Optional<Duration> silentFor(long job) {
        lock.lock();
        try {
            Polls its = polls.get(job);
            return its == null || its.held > 0
                    ? Optional.empty()
                    : Optional.of(Duration.ofNanos(nanoTime.getAsLong() - its.lastEnded));
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@code job}'s agent said it stops: its held poll, if the tracker still holds one, ends now (as a newer poll
     * would end it), and {@link #left} holds until an agent of the job polls again.
     */
    public void leave(long job) {
        lock.lock();
        try {
            Polls its = polls.computeIfAbsent(job, ignored -> new Polls());
            its.newest++;
            its.left = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Whether {@code job}'s last agent said it stops and none has polled since. */
    public boolean left(long job) {
        lock.lock();
        try {
            Polls its = polls.get(job);
            return its != null && its.left;
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
            polls.remove(job);
        } finally {
            lock.unlock();
        }
    }
}
