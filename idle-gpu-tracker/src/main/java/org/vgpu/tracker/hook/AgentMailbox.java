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

import org.vgpu.common.agent.AgentChannel;

/**
 * Commands waiting for the jobs' migration agents, one at most per job. An agent's poll waits here
 * (without the tracker's lock, on the virtual thread of its connection) until a command for its job
 * is queued or the hold time passes. A command is handed to exactly one poll: it is not sent twice,
 * because the agent may have acted on it; the tracker learns what happened from the agent's
 * {@code done} or, failing that, from where its next polls say the vGPU runs.
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
     * Waits up to {@code hold} for an order for {@code job} and takes it; empty when none came.
     *
     * @throws InterruptedException when the poll's thread is interrupted (the tracker stopping)
     */
    public Optional<Order> take(long job, Duration hold) throws InterruptedException {
        long nanos = hold.toNanos();
        lock.lock();
        try {
            while (!pending.containsKey(job)) {
                if (nanos <= 0 || nudged.remove(job)) {
                    return Optional.empty();
                }
                nanos = changed.awaitNanos(nanos);
            }
            nudged.remove(job);
            return Optional.of(pending.remove(job));
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
        } finally {
            lock.unlock();
        }
    }
}
