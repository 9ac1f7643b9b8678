package org.vgpu.runtime.remote.worker;

import java.lang.foreign.MemorySegment;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

import io.netty.channel.EventLoopGroup;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * A session the worker serves itself before it listens for its client: a private worker on a
 * loopback port of its own, on the same device, and a client in this process that asks of it what a
 * job and a migration ask, over the same transport (TCP, the event loop, pooled buffers) and through
 * the same decoder, executor, staging ring and copy kernels. A migration out of a fresh worker is
 * otherwise the first time the JIT sees those paths: measured on H200s, a fresh worker served a
 * 64 MiB state of 4 KiB regions 2.5 times slower than one that had served a few reads before. An
 * earlier warm-up over an in-memory channel halved that, but left the real channel's buffer types
 * for the JIT to meet later, where its compiled code had assumed the in-memory ones.
 */
final class WarmUpSession {
    /** Rounds of copies: enough for the JIT to compile the per-chunk and per-region paths (131 thousand regions). */
    static final int ROUNDS = 64;
    /** One allocation that chunks are copied into and out of. */
    private static final long STATE_BYTES = 4L << 20;
    /**
     * Small allocations whose regions are gathered and scattered: a migrated state of many small
     * allocations makes the worker's region check walk from allocation to allocation, a path that
     * gathers within one allocation never take. Each takes a mapping granule of device memory,
     * 256 MiB in all, for the warm-up's second.
     */
    private static final int SMALL_ALLOCATIONS = 128;

    private static final long SMALL_ALLOCATION_BYTES = 64L << 10;
    private static final int REGION_BYTES = 4096;
    /** Regions lie every 8 KiB in their allocation, as a live table's do, never back to back. */
    private static final long REGION_STRIDE = 8L << 10;
    /** A window of this process only: the warm-up ends before any client can ask for one. */
    private static final VaWindow WINDOW = VaWindow.forVgpu(VaWindow.MAX_VGPUS - 1);

    private WarmUpSession() {}

    /** How long the JIT must add no compile time to count as done with what the warm-up queued. */
    static final Duration COMPILER_QUIET = Duration.ofMillis(200);
    /** A JIT still busy after this long is not waited for further. */
    static final Duration COMPILER_WAIT_LIMIT = Duration.ofSeconds(3);

    /**
     * What a warm-up took: the session itself, then the wait for the JIT to compile what it queued.
     *
     * @param compilerIdle false where the JIT was still compiling when the wait gave up, or cannot tell
     */
    record WarmUp(Duration session, Duration compilerWait, boolean compilerIdle) {
        static final WarmUp NONE = new WarmUp(Duration.ZERO, Duration.ZERO, true);

        /** ", warmed up in ..." for the worker's start line; empty for none. */
        @SuppressWarnings("ReferenceEquality") // NONE is "no warm-up ran"; one that ran in 0 ms still says so
        String describe() {
            if (this == NONE) {
                return "";
            }
            return ", warmed up in " + session.toMillis() + " ms, then " + compilerWait.toMillis()
                    + " ms for the JIT to "
                    + (compilerIdle ? "finish compiling it" : "compile it (still busy when the wait ended)");
        }
    }

    /**
     * Serves the warm-up session on {@code device}, then waits for the JIT to go quiet: the session
     * ends with C2 compiles of its hottest paths still queued, and a client served meanwhile runs
     * them interpreted or C1-compiled. Returns when both are over and the session's port is closed.
     *
     * @return how long each took
     * @throws VgpuException what the session failed with: the device cannot serve a client either
     */
    static WarmUp run(GpuBackend backend, int device) {
        long start = System.nanoTime();
        // Only this process knows the token, so nobody else can take the private worker's one session.
        String token = UUID.randomUUID().toString();
        SessionAuthenticator onlyOurs = (presented, window) -> {
            if (!token.equals(presented)) {
                throw new VgpuException(ErrorCode.VGPU_AUTH_FAILED, "the warm-up session takes no other client");
            }
        };
        List<String> said = Collections.synchronizedList(new ArrayList<>());
        WorkerConfig config = new WorkerConfig("127.0.0.1", 0, device, "warm-up", WorkerConfig.DEFAULT_IDLE_TIMEOUT);
        EventLoopGroup client = NettyTransport.newEventLoopGroup(
                1, "vgpu-warm-up-io", RemoteConfig.defaults().spinNanos());
        try (GpuWorker worker = GpuWorker.start(config, backend, onlyOurs, null, said::add)) {
            WorkerEndpoint endpoint =
                    new WorkerEndpoint("warm-up", "127.0.0.1", worker.address().getPort(), token, () -> {});
            try (VirtualGpu gpu = RemoteGpu.connect(client, endpoint, WINDOW, RemoteConfig.defaults(), null)) {
                askWhatAMigrationAsks(gpu);
            } catch (VgpuException e) {
                throw failed(e.code(), e.detail(), List.of(), e);
            }
            WorkerReport report = worker.awaitReport();
            if (!report.clean()) {
                throw failed(ErrorCode.CUDA_ERROR_UNKNOWN, report.endReason(), said, null);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "interrupted while warming up");
        } finally {
            client.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
        Duration session = Duration.ofNanos(System.nanoTime() - start);
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
            return new WarmUp(session, Duration.ZERO, false);
        }
        long waitStart = System.nanoTime();
        boolean idle = awaitCompilerIdle(jit::getTotalCompilationTime, COMPILER_QUIET, COMPILER_WAIT_LIMIT);
        return new WarmUp(session, Duration.ofNanos(System.nanoTime() - waitStart), idle);
    }

    /**
     * Polls the JIT's total compile time until it stays the same for {@code quiet}, or {@code limit}
     * has passed. The total grows when a compile ends, so one compile longer than {@code quiet}
     * looks idle; the warm-up's hot methods are small and take milliseconds each.
     *
     * @param totalCompileMillis the JIT's total compile time so far
     * @return whether it went quiet within the limit
     */
    static boolean awaitCompilerIdle(LongSupplier totalCompileMillis, Duration quiet, Duration limit) {
        long deadline = System.nanoTime() + limit.toNanos();
        long last = totalCompileMillis.getAsLong();
        long unchangedSince = System.nanoTime();
        while (true) {
            long now = System.nanoTime();
            if (now - unchangedSince >= quiet.toNanos()) {
                return true;
            }
            if (now >= deadline) {
                return false;
            }
            LockSupport.parkNanos(Math.min(quiet.toNanos() / 4, deadline - now));
            long total = totalCompileMillis.getAsLong();
            if (total != last) {
                last = total;
                unchangedSince = System.nanoTime();
            }
        }
    }

    /** The failure of the warm-up, with what the private worker said about it where the worker ended it. */
    private static VgpuException failed(ErrorCode code, String reason, List<String> said, Throwable cause) {
        String message = "the worker's warm-up session failed: " + reason
                + (said.isEmpty() ? "" : " (" + String.join("; ", said) + ")");
        return cause == null ? new VgpuException(code, message) : new VgpuException(code, message, cause);
    }

    /**
     * Allocations, then rounds of: the large one copied in and out in chunks, and 4 KiB regions of the
     * small ones gathered out and scattered back, on one stream; then three reads in flight at once
     * on streams of their own, as a migration's mem-sync sends them. Each round ends in a wait for
     * every stream.
     */
    private static void askWhatAMigrationAsks(VirtualGpu gpu) {
        long state = gpu.memAlloc(STATE_BYTES);
        List<DeviceRegion> regions = new ArrayList<>();
        for (int a = 0; a < SMALL_ALLOCATIONS; a++) {
            long allocation = gpu.memAlloc(SMALL_ALLOCATION_BYTES);
            for (long offset = 0; offset < SMALL_ALLOCATION_BYTES; offset += REGION_STRIDE) {
                regions.add(new DeviceRegion(allocation + offset, REGION_BYTES));
            }
        }
        List<List<DeviceRegion>> memSyncReads = memSyncShapedReads(state, regions);
        long hostBytes = Math.max(
                STATE_BYTES,
                memSyncReads.stream().mapToLong(DeviceRegion::totalBytes).sum());
        MemorySegment host = gpu.memAllocHost(hostBytes);
        StreamHandle stream = gpu.streamCreate();
        List<StreamHandle> readStreams = new ArrayList<>();
        for (int read = 0; read < memSyncReads.size(); read++) {
            readStreams.add(gpu.streamCreate());
        }
        for (int round = 0; round < ROUNDS; round++) {
            gpu.memcpyHtoDAsync(state, host, STATE_BYTES, stream);
            gpu.memcpyDtoHAsync(host, state, STATE_BYTES, stream);
            gpu.memcpyDtoHGatherAsync(host, regions, stream);
            gpu.memcpyHtoDScatterAsync(regions, host, stream);
            gpu.streamSynchronize(stream);
            long offset = 0;
            for (int read = 0; read < memSyncReads.size(); read++) {
                List<DeviceRegion> batch = memSyncReads.get(read);
                gpu.memcpyDtoHGatherAsync(host.asSlice(offset), batch, readStreams.get(read));
                offset += DeviceRegion.totalBytes(batch);
            }
            for (StreamHandle readStream : readStreams) {
                gpu.streamSynchronize(readStream);
            }
        }
        for (StreamHandle readStream : readStreams) {
            gpu.streamDestroy(readStream);
        }
        gpu.streamDestroy(stream);
        gpu.memFreeHost(host);
    }

    /**
     * Reads of the shapes a mem-sync's batches take beside the round's gather of every small region:
     * one chunk of a large allocation, half a chunk with one small region behind it (a driver copy and
     * a copy-kernel launch of a single region in one chunk), and a table of twice the small regions (a
     * 32 KiB request that can span socket reads, as a batch of 2048 regions of 4 KiB does). Without
     * them the JIT met these shapes first in a migration's first reads and recompiled the paths it had
     * built for the others while the app was stopped (measured on H200s: up to 17 traps in one
     * mem-sync).
     */
    private static List<List<DeviceRegion>> memSyncShapedReads(long state, List<DeviceRegion> smallRegions) {
        long chunkBytes = RemoteConfig.defaults().chunkBytes();
        List<DeviceRegion> twice = new ArrayList<>(smallRegions);
        twice.addAll(smallRegions);
        return List.of(
                List.of(new DeviceRegion(state, chunkBytes)),
                List.of(new DeviceRegion(state + chunkBytes, chunkBytes / 2), smallRegions.getFirst()),
                twice);
    }
}
