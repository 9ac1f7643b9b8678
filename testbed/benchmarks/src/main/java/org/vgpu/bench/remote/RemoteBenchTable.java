package org.vgpu.bench.remote;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;

import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.RemoteGpu;

/**
 * {@code vgpu remote-bench}'s main table: every row measured once per trial in alternating order, and the ratios its
 * goals are stated in.
 */
final class RemoteBenchTable {
    private static final double GOAL_SYNC_OVERHEAD_PER_RTT = 1.25;
    /**
     * Remote launch + synchronize against its floor: the local one plus one plain round trip (here Java's blocking 64 B
     * one, the run's own; a C program's on the same loopback is about 3 us less, so this floor is the kinder one).
     */
    private static final double GOAL_SYNC_PER_FLOOR = 1.10;

    private static final double GOAL_ASYNC_THROUGHPUT = 0.50;
    private static final double GOAL_BANDWIDTH = 0.90;
    /** A same-host worker's copies against the local vGPU's pinned copies. */
    private static final double GOAL_SAME_HOST_BANDWIDTH = 0.80;
    /** Bulk over TCP against 8 parallel plain loopback streams. */
    private static final double GOAL_PARALLEL_BANDWIDTH = 0.80;

    private RemoteBenchTable() {}

    static List<Row> measure(
            BenchWorker worker,
            VirtualGpu localGpu,
            VirtualGpu remoteGpu,
            int syncIterations,
            int asyncIterations,
            long copyBytes,
            int trials,
            PrintStream out) {
        BenchDevice local = new BenchDevice(localGpu, copyBytes);
        BenchDevice remote = new BenchDevice(remoteGpu, copyBytes);
        out.printf(
                "remote pinned memory (memAllocHost): %s%n%n", ((RemoteGpu) remoteGpu).sharedHostMemoryDescription());
        // shared: the parallel baseline's streams each read or write their share on a thread of their own
        try (Arena arena = Arena.ofShared()) {
            // the plain socket's own host memory, as large as the remote copies' host buffer
            MemorySegment plainMemory = arena.allocate(copyBytes, 64);
            PlainSocketBaseline.fillPattern(plainMemory);
            String baselineHost = worker.baseline().host();
            int baselinePort = worker.baseline().port();
            Series rtt =
                    new Series(() -> PlainSocketBaseline.roundTripNanos(baselineHost, baselinePort, syncIterations));
            Series localSync = new Series(() -> local.launchAndSynchronizeNanos(syncIterations));
            Series remoteSync = new Series(() -> remote.launchAndSynchronizeNanos(syncIterations));
            Series localAsync = new Series(() -> local.asyncLaunchNanos(asyncIterations));
            Series remoteAsync = new Series(() -> remote.asyncLaunchNanos(asyncIterations));
            Series plainSendFromMemory =
                    new Series(() -> PlainSocketBaseline.sendFromMemoryNanos(baselineHost, baselinePort, plainMemory));
            Series plainSendCached =
                    new Series(() -> PlainSocketBaseline.sendNanos(baselineHost, baselinePort, copyBytes));
            // the remote copies' host memory is the app's own (the session's bulk path) or the vGPU's page-locked
            // memory
            // (shared with a worker on this host); the local vGPU's is its page-locked memory, the goal's baseline
            Series remoteToDevice = new Series(() -> remote.copyToDeviceNanos(false));
            Series remotePinnedToDevice = new Series(() -> remote.copyToDeviceNanos(true));
            Series localToDevice = new Series(() -> local.copyToDeviceNanos(true));
            Series plainReceiveIntoMemory = new Series(
                    () -> PlainSocketBaseline.receiveIntoMemoryNanos(baselineHost, baselinePort, plainMemory));
            Series plainReceiveCached =
                    new Series(() -> PlainSocketBaseline.receiveNanos(baselineHost, baselinePort, copyBytes));
            Series remoteToHost = new Series(() -> remote.copyToHostNanos(false));
            Series remotePinnedToHost = new Series(() -> remote.copyToHostNanos(true));
            Series localToHost = new Series(() -> local.copyToHostNanos(true));
            Series parallelSend =
                    new Series(() -> PlainSocketBaseline.parallelSendNanos(baselineHost, baselinePort, copyBytes));
            Series parallelReceive =
                    new Series(() -> PlainSocketBaseline.parallelReceiveNanos(baselineHost, baselinePort, copyBytes));
            Series parallelSendFromMemory = new Series(
                    () -> PlainSocketBaseline.parallelSendFromMemoryNanos(baselineHost, baselinePort, plainMemory));
            Series parallelReceiveIntoMemory = new Series(
                    () -> PlainSocketBaseline.parallelReceiveIntoMemoryNanos(baselineHost, baselinePort, plainMemory));
            List<Series> all = List.of(
                    parallelSend,
                    parallelReceive,
                    parallelSendFromMemory,
                    parallelReceiveIntoMemory,
                    rtt,
                    localSync,
                    remoteSync,
                    localAsync,
                    remoteAsync,
                    plainSendFromMemory,
                    plainSendCached,
                    remoteToDevice,
                    remotePinnedToDevice,
                    localToDevice,
                    plainReceiveIntoMemory,
                    plainReceiveCached,
                    remoteToHost,
                    remotePinnedToHost,
                    localToHost);
            Series.sampleAlternating(all, Series.WARM_UP_TRIALS, trials);
            String mib = (copyBytes >> 20) + " MiB";
            // Java's, not the native C streams the goal names: a native baseline would run a few percent faster
            String streams = PlainSocketBaseline.PARALLEL_STREAMS + " parallel plain sockets (Java NIO)";
            String cached = "a cached " + (PlainSocketBaseline.CACHED_BUFFER_BYTES >> 20) + " MiB buffer";
            return List.of(
                    Row.time("plain socket 64 B round trip", rtt),
                    Row.time("local launch + synchronize", localSync),
                    Row.time("remote launch + synchronize", remoteSync),
                    Row.ratio(
                            "  remote overhead / plain round trip",
                            "<= " + GOAL_SYNC_OVERHEAD_PER_RTT,
                            false,
                            GOAL_SYNC_OVERHEAD_PER_RTT,
                            t -> (remoteSync.at(t) - localSync.at(t)) / rtt.at(t),
                            (remoteSync.median() - localSync.median()) / rtt.median(),
                            trials),
                    Row.ratio(
                            "  remote / (local + plain round trip)",
                            "<= " + GOAL_SYNC_PER_FLOOR,
                            false,
                            GOAL_SYNC_PER_FLOOR,
                            t -> remoteSync.at(t) / (localSync.at(t) + rtt.at(t)),
                            remoteSync.median() / (localSync.median() + rtt.median()),
                            trials),
                    Row.rate("local async launch", localAsync),
                    Row.rate("remote async launch (batched)", remoteAsync),
                    Row.ratio(
                            "  remote / local launch throughput",
                            ">= 50 %",
                            true,
                            GOAL_ASYNC_THROUGHPUT,
                            t -> localAsync.at(t) / remoteAsync.at(t),
                            localAsync.median() / remoteAsync.median(),
                            trials),
                    Row.bandwidth("plain socket send from " + mib + " host memory", plainSendFromMemory, copyBytes),
                    Row.bandwidth("plain socket send through " + cached, plainSendCached, copyBytes),
                    Row.bandwidth("remote host->device " + mib, remoteToDevice, copyBytes),
                    bandwidthRatio(
                            "  remote vs plain socket from " + mib + " host memory",
                            plainSendFromMemory,
                            remoteToDevice,
                            trials),
                    bandwidthRatio(
                            "  remote vs plain socket through " + cached, plainSendCached, remoteToDevice, trials),
                    Row.bandwidth("  (local host->device " + mib + ")", localToDevice, copyBytes),
                    localRatio("  remote vs local copy from pinned memory", localToDevice, remoteToDevice, trials),
                    Row.bandwidth(
                            "remote host->device " + mib + " from pinned memory", remotePinnedToDevice, copyBytes),
                    localRatio(
                            "  remote pinned vs local copy from pinned memory",
                            localToDevice,
                            remotePinnedToDevice,
                            trials),
                    Row.bandwidth(
                            "plain socket receive into " + mib + " host memory", plainReceiveIntoMemory, copyBytes),
                    Row.bandwidth("plain socket receive through " + cached, plainReceiveCached, copyBytes),
                    Row.bandwidth("remote device->host " + mib, remoteToHost, copyBytes),
                    bandwidthRatio(
                            "  remote vs plain socket into " + mib + " host memory",
                            plainReceiveIntoMemory,
                            remoteToHost,
                            trials),
                    bandwidthRatio(
                            "  remote vs plain socket through " + cached, plainReceiveCached, remoteToHost, trials),
                    Row.bandwidth("  (local device->host " + mib + ")", localToHost, copyBytes),
                    localRatio("  remote vs local copy into pinned memory", localToHost, remoteToHost, trials),
                    Row.bandwidth("remote device->host " + mib + " into pinned memory", remotePinnedToHost, copyBytes),
                    localRatio(
                            "  remote pinned vs local copy into pinned memory",
                            localToHost,
                            remotePinnedToHost,
                            trials),
                    Row.bandwidth(streams + " send from " + mib + " host memory", parallelSendFromMemory, copyBytes),
                    parallelRatio(
                            "  remote host->device vs " + streams + " from host memory",
                            parallelSendFromMemory,
                            remoteToDevice,
                            trials),
                    Row.bandwidth(streams + " send through cached buffers", parallelSend, copyBytes),
                    parallelRatio("  remote host->device vs " + streams, parallelSend, remoteToDevice, trials),
                    Row.bandwidth(
                            streams + " receive into " + mib + " host memory", parallelReceiveIntoMemory, copyBytes),
                    parallelRatio(
                            "  remote device->host vs " + streams + " into host memory",
                            parallelReceiveIntoMemory,
                            remoteToHost,
                            trials),
                    Row.bandwidth(streams + " receive through cached buffers", parallelReceive, copyBytes),
                    parallelRatio("  remote device->host vs " + streams, parallelReceive, remoteToHost, trials));
        } finally {
            local.free();
            remote.free();
        }
    }

    /** Remote bandwidth as a share of a plain socket's moving the same bytes: its time over the remote copy's. */
    static Row bandwidthRatio(String name, Series plain, Series remote, int trials) {
        return share(name, GOAL_BANDWIDTH, plain, remote, trials);
    }

    /**
     * Remote bandwidth over TCP as a share of {@value PlainSocketBaseline#PARALLEL_STREAMS} parallel plain sockets
     * moving the same bytes in the same run: the goal of the striped bulk path, stated against native streams, here
     * measured with Java's.
     */
    static Row parallelRatio(String name, Series parallel, Series remote, int trials) {
        return share(name, GOAL_PARALLEL_BANDWIDTH, parallel, remote, trials);
    }

    /**
     * Remote bandwidth as a share of the local vGPU's copying the same bytes from or into pinned memory: the goal of
     * a worker on the client's host, whose bytes go through shared memory.
     */
    static Row localRatio(String name, Series local, Series remote, int trials) {
        return share(name, GOAL_SAME_HOST_BANDWIDTH, local, remote, trials);
    }

    /** The remote copy's bandwidth as a share of {@code baseline}'s moving the same bytes, against {@code goal}. */
    private static Row share(String name, double goal, Series baseline, Series remote, int trials) {
        return Row.ratio(
                name,
                ">= " + Math.round(goal * 100) + " %",
                true,
                goal,
                t -> baseline.at(t) / remote.at(t),
                baseline.median() / remote.median(),
                trials);
    }
}
