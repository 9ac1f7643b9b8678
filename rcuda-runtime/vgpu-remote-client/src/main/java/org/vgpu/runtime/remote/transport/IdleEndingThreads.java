package org.vgpu.runtime.remote.transport;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Pools of daemon threads that end after 10 idle seconds and start again on demand: the threads a connection or
 * the process keeps for its copies cost nothing while no bulk bytes move, and never hold the JVM open.
 */
public final class IdleEndingThreads {
    private IdleEndingThreads() {}

    /** Up to {@code threads} threads named {@code name-1}, {@code name-2}, ...; tasks beyond them queue. */
    public static ExecutorService pool(int threads, String name) {
        AtomicInteger started = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(
                threads,
                threads,
                10,
                TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(),
                task -> Thread.ofPlatform()
                        .name(name + "-" + started.incrementAndGet())
                        .daemon()
                        .unstarted(task));
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }
}
