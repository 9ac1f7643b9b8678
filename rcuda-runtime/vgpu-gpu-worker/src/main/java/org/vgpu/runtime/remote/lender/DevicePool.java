package org.vgpu.runtime.remote.lender;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.remote.lender.WorkerStatus.State;

/**
 * The workers of one device: a warm pool kept at its size, the workers handed out, and the
 * reaping of those that exit.
 *
 * <p>A worker ends its life in order when it prints its served line: after its session, or, still
 * warm, when no client came within its idle timeout; a warm one is then replaced at once. A worker
 * that fails to start, or dies before it was handed out without that line, makes the pool wait
 * before it starts another, twice as long after each such failure (up to a minute), so a broken
 * GPU or driver costs a log line a minute rather than a process launch loop. Handing a worker out,
 * or an orderly end, shows the device works and ends the waiting.
 */
final class DevicePool {
    private static final Logger LOG = LoggerFactory.getLogger(DevicePool.class);
    static final Duration FIRST_RETRY_DELAY = Duration.ofSeconds(1);
    static final Duration MAX_RETRY_DELAY = Duration.ofSeconds(60);

    /** One worker's bookkeeping; every field is guarded by the pool. */
    private static final class Entry {
        final String workerId;
        final Instant startedAt = Instant.now();
        /** Started for an {@code open} that is waiting for it, not for the warm pool. */
        final boolean forOpen;

        State state = State.STARTING;
        LaunchedWorker worker;

        Entry(String workerId, boolean forOpen) {
            this.workerId = workerId;
            this.forOpen = forOpen;
        }
    }

    private final int device;
    private final LenderConfig config;
    private final WorkerLauncher launcher;
    private final Supplier<String> newWorkerId;
    private final ExecutorService launches;
    private final ScheduledExecutorService timer;

    private final List<Entry> entries = new ArrayList<>();
    private Duration retryDelay = FIRST_RETRY_DELAY;
    private boolean waitingToRetry;
    private boolean closed;

    DevicePool(
            int device,
            LenderConfig config,
            WorkerLauncher launcher,
            Supplier<String> newWorkerId,
            ExecutorService launches,
            ScheduledExecutorService timer) {
        this.device = device;
        this.config = config;
        this.launcher = launcher;
        this.newWorkerId = newWorkerId;
        this.launches = launches;
        this.timer = timer;
    }

    /**
     * Starts as many workers as the warm pool lacks, unless the pool is waiting after a failure.
     * The pool never holds more warm workers than could still be lent: each holds a CUDA context,
     * which would take memory from the jobs on a GPU already lent to its limit.
     */
    synchronized void refill() {
        if (closed || waitingToRetry) {
            return;
        }
        long warmOrStarting = entries.stream()
                .filter(entry -> !entry.forOpen && entry.state != State.LENT)
                .count();
        long wanted = Math.min(config.poolSize(), config.maxLentPerDevice() - lentCount());
        for (long missing = wanted - warmOrStarting; missing > 0; missing--) {
            Entry entry = new Entry(newWorkerId.get(), false);
            entries.add(entry);
            launches.execute(() -> launchWarm(entry));
        }
    }

    /**
     * Hands out the oldest warm worker, or starts one and waits for it when none is warm.
     *
     * @throws LendingException when the device already has its most lent workers (DEVICE_BUSY), a
     *         worker cannot be started (WORKER_NOT_STARTED), or the lender is closing (CLOSING)
     */
    LentWorker open() {
        Entry entry;
        synchronized (this) {
            if (closed) {
                throw closing();
            }
            long lent = lentCount();
            if (lent >= config.maxLentPerDevice()) {
                throw new LendingException(
                        LendingException.Code.DEVICE_BUSY,
                        "device " + device + " already has " + lent
                                + " lent worker(s), the most this lender hands out per device");
            }
            Optional<Entry> warm = entries.stream()
                    .filter(candidate -> candidate.state == State.WARM
                            && candidate.worker.process().isAlive())
                    .findFirst();
            if (warm.isPresent()) {
                entry = warm.get();
                entry.state = State.LENT;
                retryDelay = FIRST_RETRY_DELAY;
                refill();
                LOG.info("device {}: lent warm worker {} at {}", device, entry.workerId, entry.worker.endpoint());
                return new LentWorker(device, entry.workerId, entry.worker.endpoint());
            }
            entry = new Entry(newWorkerId.get(), true);
            entries.add(entry);
        }
        LOG.info("device {}: no warm worker, starting {} for this request", device, entry.workerId);
        LaunchedWorker worker = launch(entry);
        if (!adopt(entry, worker, State.LENT)) {
            throw closing();
        }
        LOG.info("device {}: lent new worker {} at {}", device, entry.workerId, worker.endpoint());
        return new LentWorker(device, entry.workerId, worker.endpoint());
    }

    /**
     * Stops the lent worker {@code workerId} (its lend ended: the tracker says the job is gone, so a
     * session it never opened, or left open, must not keep the device's lent slot). Its exit is
     * reaped like any other.
     *
     * @return false when this pool has no such lent worker
     */
    boolean closeLent(String workerId) {
        LaunchedWorker worker;
        synchronized (this) {
            Optional<Entry> lent = entries.stream()
                    .filter(entry ->
                            entry.state == State.LENT && entry.workerId.equals(workerId) && entry.worker != null)
                    .findFirst();
            if (lent.isEmpty()) {
                return false;
            }
            worker = lent.get().worker;
        }
        LOG.info("device {}: closing lent worker {} on request", device, workerId);
        worker.close();
        return true;
    }

    /** Workers handed out, or being started for an {@code open}. */
    private synchronized long lentCount() {
        return entries.stream()
                .filter(entry -> entry.state == State.LENT || entry.forOpen)
                .count();
    }

    synchronized List<WorkerStatus> status() {
        Instant now = Instant.now();
        return entries.stream()
                .map(entry -> new WorkerStatus(
                        device,
                        entry.workerId,
                        Optional.ofNullable(entry.worker).map(LaunchedWorker::endpoint),
                        entry.state,
                        Duration.between(entry.startedAt, now)))
                .toList();
    }

    /** Stops refilling and accepting; returns the workers that still run, for the caller to stop. */
    synchronized List<LaunchedWorker> shutDown() {
        closed = true;
        return entries.stream()
                .map(entry -> entry.worker)
                .filter(Objects::nonNull)
                .toList();
    }

    private void launchWarm(Entry entry) {
        LaunchedWorker worker;
        try {
            worker = launch(entry);
        } catch (LendingException e) {
            synchronized (this) {
                if (closed) {
                    return;
                }
            }
            LOG.warn("device {}: warm worker failed to start: {}", device, e.getMessage());
            retryLater();
            return;
        }
        if (adopt(entry, worker, State.WARM)) {
            LOG.info("device {}: worker {} warm at {}", device, entry.workerId, worker.endpoint());
        }
    }

    /** Launches on the launch executor, so closing the lender can interrupt every launch in progress. */
    private LaunchedWorker launch(Entry entry) {
        WorkerSpec spec = config.workerSpec(device, entry.workerId);
        try {
            Future<LaunchedWorker> launched = launches.submit(() -> launcher.launch(spec));
            return launched.get();
        } catch (ExecutionException e) {
            forget(entry);
            if (e.getCause() instanceof LendingException failure) {
                throw failure;
            }
            LOG.warn("device {}: launching worker {} failed unexpectedly", device, entry.workerId, e.getCause());
            throw new LendingException(
                    LendingException.Code.WORKER_NOT_STARTED,
                    "worker " + entry.workerId + " failed to start: " + VgpuFailure.describe(e.getCause()),
                    e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            forget(entry);
            throw closing();
        } catch (RejectedExecutionException e) {
            forget(entry);
            throw closing();
        }
    }

    /** Records a started worker; when the pool closed meanwhile, stops it instead and returns false. */
    private boolean adopt(Entry entry, LaunchedWorker worker, State state) {
        synchronized (this) {
            if (!closed) {
                entry.worker = worker;
                entry.state = state;
                worker.onExit().thenRun(() -> reap(entry));
                return true;
            }
            entries.remove(entry);
        }
        worker.close();
        return false;
    }

    private void reap(Entry entry) {
        State lastState;
        boolean closing;
        synchronized (this) {
            entries.remove(entry);
            lastState = entry.state;
            closing = closed;
        }
        LaunchedWorker worker = entry.worker;
        int status = worker.process().exitValue();
        long ageSeconds = Duration.between(entry.startedAt, Instant.now()).toSeconds();
        Optional<String> served = worker.servedSummary();
        if (closing) {
            LOG.info(
                    "device {}: worker {} stopped ({}): {}",
                    device,
                    entry.workerId,
                    lastState,
                    served.orElse("served no session"));
            return;
        }
        boolean orderly = served.isPresent();
        if (orderly && (status == 0 || lastState == State.WARM)) {
            LOG.info(
                    "device {}: worker {} ({}) exited with status {} after {} s: {}",
                    device,
                    entry.workerId,
                    lastState,
                    status,
                    ageSeconds,
                    served.get());
        } else {
            LOG.warn(
                    "device {}: worker {} ({}) exited with status {} after {} s: {}; its stderr ended with:\n{}",
                    device,
                    entry.workerId,
                    lastState,
                    status,
                    ageSeconds,
                    served.orElse("it printed no served line"),
                    worker.stderrTail());
        }
        if (!orderly && lastState == State.WARM) {
            retryLater();
            return;
        }
        if (orderly) {
            synchronized (this) {
                retryDelay = FIRST_RETRY_DELAY;
            }
        }
        refill();
    }

    private synchronized void retryLater() {
        if (closed || waitingToRetry) {
            return;
        }
        waitingToRetry = true;
        Duration delay = retryDelay;
        Duration doubled = retryDelay.multipliedBy(2);
        retryDelay = doubled.compareTo(MAX_RETRY_DELAY) > 0 ? MAX_RETRY_DELAY : doubled;
        LOG.warn("device {}: refilling the warm pool again in {} s", device, delay.toSeconds());
        timer.schedule(
                () -> {
                    synchronized (this) {
                        waitingToRetry = false;
                    }
                    refill();
                },
                delay.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    private synchronized void forget(Entry entry) {
        entries.remove(entry);
    }

    private static LendingException closing() {
        return new LendingException(LendingException.Code.CLOSING, "the lender is shutting down");
    }
}
