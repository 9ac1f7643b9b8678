package org.vgpu.migration;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.emulated.KernelTwinRegistry;

/**
 * Migrations of a small state between two vGPUs of a private CPU emulation, run once per process on a daemon thread
 * when a job's vGPUs open: the job's first real migration is otherwise the first time this JVM loads the classes of a
 * migration, links its call sites and runs its per-allocation loops, all while the app waits (measured on an H100:
 * a process's first migration of 10,000 small allocations was blocked 82 to 98 ms, its fifth 37 to 39 ms). The
 * worker side has its own warm-up session; this is the app's side. Nothing of the emulation reaches the job: its
 * vGPUs, windows and memory are the warm-up's own, and a failure is logged, never thrown at the job.
 *
 * <p>{@value #PROPERTY}{@code =false} turns it off, to measure what it is worth or where a job's JVM must not spend
 * the CPU (about a second of one core, once).
 */
public final class MigrationWarmUp {
    /** The system property that turns the warm-up off. */
    public static final String PROPERTY = "vgpu.migration.warm-up";

    private static final Logger LOG = LoggerFactory.getLogger(MigrationWarmUp.class);
    /** Small allocations of the warm-up's state: enough calls for the JIT to compile the per-allocation paths. */
    static final int SMALL_ALLOCATIONS = 2048;

    private static final long SMALL_BYTES = 4096;
    /** One allocation of its own chunks, as a large buffer is. */
    private static final long LARGE_BYTES = 3L << 20;
    /** Migrations back and forth: each one replays and copies the whole state. */
    static final int MIGRATIONS = 6;
    /** The warm-up's vGPU: its window is this process's own business, never a job's. */
    private static final VaWindow WINDOW = VaWindow.forVgpu(VaWindow.MAX_VGPUS - 1);

    private static final AtomicReference<CompletableFuture<Duration>> STARTED = new AtomicReference<>();

    private MigrationWarmUp() {}

    /**
     * Starts the warm-up on a daemon thread of its own unless this process already did or {@value #PROPERTY} is
     * {@code false}; returns at once.
     *
     * @return how long it took, once done; empty ({@link Duration#ZERO}) when it is turned off
     */
    // a hint that the warm-up yields to the job's threads; nothing relies on it
    @SuppressWarnings("ThreadPriorityCheck")
    public static CompletableFuture<Duration> startOnce() {
        if (!Boolean.parseBoolean(System.getProperty(PROPERTY, "true"))) {
            return CompletableFuture.completedFuture(Duration.ZERO);
        }
        CompletableFuture<Duration> started = new CompletableFuture<>();
        if (!STARTED.compareAndSet(null, started)) {
            return STARTED.get();
        }
        Thread thread = new Thread(
                () -> {
                    try {
                        Duration took = run();
                        LOG.debug(
                                "migration warm-up: {} migrations of a small emulated state in {} ms",
                                MIGRATIONS,
                                took.toMillis());
                        started.complete(took);
                    } catch (RuntimeException | Error e) {
                        LOG.warn("migration warm-up failed; the first migration runs cold", e);
                        started.completeExceptionally(e);
                    }
                },
                "vgpu-migration-warm-up");
        thread.setDaemon(true);
        thread.setPriority(Thread.MIN_PRIORITY);
        thread.start();
        return started;
    }

    /**
     * Migrates a state of {@value #SMALL_ALLOCATIONS} small allocations, one large one, a stream, an event and a
     * context setting between two emulated devices {@value #MIGRATIONS} times, and checks that its data came through.
     *
     * @return how long it took
     * @throws IllegalStateException where the data differs after the moves (a bug the first real migration would meet)
     */
    static Duration run() {
        long start = System.nanoTime();
        long memory = 2 * (SMALL_ALLOCATIONS * SMALL_BYTES + LARGE_BYTES) + (16L << 20);
        try (EmulatedBackend backend = new EmulatedBackend(2, memory, new KernelTwinRegistry());
                MigratableGpu gpu = new MigratableGpu(
                        backend.open(0, WINDOW),
                        new MigrationTarget.LocalGpu(0),
                        new NodeTargetResolver(backend),
                        MigrationConfig.DEFAULTS,
                        MigrationListener.NONE,
                        MigrationFaults.NONE);
                Arena arena = Arena.ofConfined()) {
            List<DeviceRegion> state = new ArrayList<>(SMALL_ALLOCATIONS + 1);
            for (int i = 0; i < SMALL_ALLOCATIONS; i++) {
                state.add(new DeviceRegion(gpu.memAlloc(SMALL_BYTES), SMALL_BYTES));
            }
            state.add(new DeviceRegion(gpu.memAlloc(LARGE_BYTES), LARGE_BYTES));
            long bytes = DeviceRegion.totalBytes(state);
            MemorySegment written = arena.allocate(bytes, 64);
            for (long word = 0; word < bytes / Long.BYTES; word++) {
                written.setAtIndex(ValueLayout.JAVA_LONG, word, word * 0x9E3779B97F4A7C15L);
            }
            StreamHandle stream = gpu.streamCreate();
            EventHandle event = gpu.eventCreate();
            gpu.ctxSetLimit(ContextLimit.STACK_SIZE, 2048);
            gpu.memcpyHtoDScatterAsync(state, written, stream);
            gpu.eventRecord(event, stream);
            gpu.streamSynchronize(stream);
            for (int move = 0; move < MIGRATIONS; move++) {
                gpu.migrate(new MigrationTarget.LocalGpu((move + 1) % 2));
            }
            MemorySegment read = arena.allocate(bytes, 64);
            gpu.memcpyDtoHGatherAsync(read, state, stream);
            gpu.streamSynchronize(stream);
            if (read.mismatch(written) != -1) {
                throw new IllegalStateException("the warm-up's state differs after its migrations");
            }
        }
        return Duration.ofNanos(System.nanoTime() - start);
    }
}
