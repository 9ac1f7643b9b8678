package org.vgpu.migration;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.concurrent.locks.StampedLock;

/**
 * What the migration lock costs per call, alone, against the obvious alternatives, with one and
 * with several app threads calling at once: the measurement behind {@link CallGate}'s design,
 * printed by {@code vgpu migration-bench}. The alternatives exist only as baselines here.
 */
public final class GateCost {
    private GateCost() {}

    /** A way to bracket a call. */
    public enum Scheme {
        NONE("no lock (baseline)"),
        CALL_GATE("CallGate: per-thread slot + shared state (vgpu)"),
        SHARED_COUNTER("AtomicLong in-flight counter + volatile flag"),
        READ_WRITE_LOCK("ReentrantReadWriteLock read lock"),
        STAMPED_LOCK("StampedLock read lock");

        private final String description;

        Scheme(String description) {
            this.description = description;
        }

        public String description() {
            return description;
        }
    }

    /** Nanoseconds per bracketed empty call, each of {@code threads} threads making {@code calls} calls at once. */
    @SuppressWarnings("LockNotBeforeTry") // the read lock's bare cost is what is measured: nothing between can throw
    public static double nanosPerCall(Scheme scheme, int threads, long calls) {
        Runnable body = switch (scheme) {
            case NONE -> loop(calls, () -> {});
            case CALL_GATE -> {
                CallGate gate = new CallGate("benchmark");
                yield loop(calls, () -> gate.exit(gate.enter()));
            }
            case SHARED_COUNTER -> {
                AtomicLong inFlight = new AtomicLong();
                AtomicBoolean migrating = new AtomicBoolean();
                yield loop(calls, () -> {
                    inFlight.incrementAndGet();
                    if (migrating.get()) {
                        throw new IllegalStateException("never set");
                    }
                    inFlight.decrementAndGet();
                });
            }
            case READ_WRITE_LOCK -> {
                ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
                yield loop(calls, () -> {
                    lock.readLock().lock();
                    lock.readLock().unlock();
                });
            }
            case STAMPED_LOCK -> {
                StampedLock lock = new StampedLock();
                yield loop(calls, () -> lock.unlockRead(lock.readLock()));
            }
        };
        CountDownLatch start = new CountDownLatch(1);
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            workers[t] = Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                body.run();
            });
        }
        long begin = System.nanoTime();
        start.countDown();
        for (Thread worker : workers) {
            try {
                worker.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while measuring", e);
            }
        }
        return (double) (System.nanoTime() - begin) / calls;
    }

    private static Runnable loop(long calls, Runnable call) {
        return () -> {
            for (long i = 0; i < calls; i++) {
                call.run();
            }
        };
    }
}
