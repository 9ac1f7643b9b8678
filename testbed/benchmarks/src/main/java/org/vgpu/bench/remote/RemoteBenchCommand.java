package org.vgpu.bench.remote;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;

import io.netty.channel.EventLoopGroup;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.bench.Medians;
import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.lender.LaunchedWorker;
import org.vgpu.runtime.remote.lender.WorkerLauncher;
import org.vgpu.runtime.remote.lender.WorkerSpec;
import org.vgpu.runtime.remote.security.TlsConfig;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * {@code vgpu remote-bench}: what a remote vGPU costs over the network, against the network's own
 * floor between two processes of the same machine. It starts a GPU worker process and a
 * {@link PlainSocketPeer} process (the plain-socket baseline's server) and, in this process,
 * measures: the plain blocking-socket 64-byte round trip,
 * launch+synchronize locally and remotely, asynchronous launch throughput locally and remotely,
 * and remote host-to-device and device-to-host bandwidth against a plain socket moving the same
 * bytes in the same direction, twice: from (or into) native host memory of the whole copy's size
 * on both ends, as a remote copy reads (or writes) the caller's whole host buffer, the fair floor;
 * and through a cached {@value PlainSocketBaseline#CACHED_BUFFER_BYTES}-byte buffer on both ends,
 * which never leaves the CPU caches, the network stack alone; and both directions against
 * {@value PlainSocketBaseline#PARALLEL_STREAMS} plain sockets moving the copy's bytes in parallel through cached
 * buffers (Java NIO, one thread each), the floor the striped bulk path is measured against. The header names the
 * path the session's bulk bytes took (in-band, shared memory or stripes). Every trial measures every row, in alternating order; the table shows medians, the
 * ratios the goals are stated in, the per-trial range of each ratio, and a plain verdict. It is a
 * measurement, never an assertion: the exit status says only whether the runs worked. With
 * {@code --backend emulated} the device is the CPU emulation and every figure says so.
 */
public final class RemoteBenchCommand implements Subcommand {
    private static final double GOAL_SYNC_OVERHEAD_PER_RTT = 1.25;
    private static final double GOAL_ASYNC_THROUGHPUT = 0.50;
    private static final double GOAL_BANDWIDTH = 0.90;
    /** A same-host worker's copies against the local vGPU's pinned copies. */
    private static final double GOAL_SAME_HOST_BANDWIDTH = 0.80;
    /** Bulk over TCP against 8 parallel plain loopback streams. */
    private static final double GOAL_PARALLEL_BANDWIDTH = 0.80;

    private static final int WARM_UP_TRIALS = 2;
    private static final String WORKER_ID = "bench-worker";
    private static final Dim3 ONE = Dim3.of(1);

    @Override
    public String name() {
        return "remote-bench";
    }

    @Override
    public String summary() {
        return "time a remote vGPU (worker process on this machine) against local calls and plain sockets, print the ratios";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("backend")
                        .hasArg()
                        .argName("NAME")
                        .desc("native or emulated, for the worker and the local comparison (default native)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("device")
                        .hasArg()
                        .argName("D")
                        .desc("device this client uses locally (default 0)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("worker-device")
                        .hasArg()
                        .argName("D")
                        .desc("device the worker serves (default: --device; on a two-GPU machine use the other GPU, so"
                                + " lender and borrower GPUs are distinct)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("host")
                        .hasArg()
                        .argName("ADDRESS")
                        .desc("address the worker listens on and this client connects to (default 127.0.0.1)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("trials")
                        .hasArg()
                        .argName("N")
                        .desc("timed trials whose median is reported (default 9), after " + WARM_UP_TRIALS
                                + " warm-up trials")
                        .get())
                .addOption(Option.builder()
                        .longOpt("sync-iterations")
                        .hasArg()
                        .argName("N")
                        .desc("round trips and launch+synchronize pairs per trial (default 2000)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("async-iterations")
                        .hasArg()
                        .argName("N")
                        .desc("asynchronous launches per trial (default 20000)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("copy-mib")
                        .hasArg()
                        .argName("MIB")
                        .desc("size of each bulk copy (default 256)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tls-cost")
                        .desc("instead: what TLS costs, a worker with TLS (self-signed, pinned, as holders run) against"
                                + " one in plain TCP, in the same run")
                        .get())
                .addOption(Option.builder()
                        .longOpt("round-trip-ladder")
                        .desc("instead: where a remote call's round trip goes, rung by rung: plain sockets blocking and"
                                + " spinning, Netty with the runtime's event loops, a remote synchronize; --sync-iterations"
                                + " round trips per trial")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        String backendName = CommandLines.choice(line, "backend", "native", WorkerSpec.BACKENDS);
        int device = CommandLines.intValue(line, "device", 0, 0);
        int workerDevice = CommandLines.intValue(line, "worker-device", device, 0);
        String host = line.getOptionValue("host", "127.0.0.1");
        int trials = CommandLines.intValue(line, "trials", 9, 1);
        int syncIterations = CommandLines.intValue(line, "sync-iterations", 2000, 10);
        int asyncIterations = CommandLines.intValue(line, "async-iterations", 20_000, 10);
        long copyBytes = (long) CommandLines.intValue(line, "copy-mib", 256, 1) << 20;

        if (line.hasOption("tls-cost")) {
            return new TlsCost(host, backendName, workerDevice, trials, syncIterations, copyBytes).run(out);
        }
        try (GpuBackend local = Backends.open(backendName)) {
            if (device >= local.deviceCount() || workerDevice >= local.deviceCount()) {
                throw new ParseException("--device and --worker-device must be < " + local.deviceCount() + ", got "
                        + device + " and " + workerDevice);
            }
            if (line.hasOption("round-trip-ladder")) {
                return new RoundTripLadder(host, backendName, device, workerDevice, trials, syncIterations)
                        .run(local, out);
            }
            boolean emulated = local.isEmulation();
            String label = emulated ? " [CPU EMULATION]" : "";
            try (BenchWorker worker = BenchWorker.start(host, backendName, workerDevice);
                    VirtualGpu localGpu = local.open(device, VaWindow.forVgpu(0));
                    VirtualGpu remoteGpu = worker.connect(VaWindow.forVgpu(0))) {
                out.printf(
                        "vgpu remote-bench: %s device %d (%s), worker on device %d: %s, transport %s, bulk bytes %s;"
                                + " Java %s%n",
                        backendName,
                        device,
                        local.deviceProperties(device).describe(),
                        workerDevice,
                        ((RemoteGpu) remoteGpu).workerDescription(),
                        NettyTransport.describe(),
                        ((RemoteGpu) remoteGpu).bulkPathDescription(),
                        Runtime.version());
                if (emulated) {
                    out.println("CPU EMULATION: the device is the CPU emulation, so these figures measure the remote"
                            + " runtime and this machine's network stack, not a GPU");
                }
                out.printf(
                        "client and worker are separate processes on %s, %d cores; tuning: %s; %d trials after %d"
                                + " warm-up trials; medians, and the range of each ratio over the trials%n",
                        host,
                        Runtime.getRuntime().availableProcessors(),
                        RemoteTuning.current().describe(),
                        trials,
                        WARM_UP_TRIALS);
                List<Row> rows =
                        measure(worker, localGpu, remoteGpu, syncIterations, asyncIterations, copyBytes, trials, out);
                printTable(rows, label, out);
            }
        }
        return 0;
    }

    private static List<Row> measure(
            BenchWorker worker,
            VirtualGpu localGpu,
            VirtualGpu remoteGpu,
            int syncIterations,
            int asyncIterations,
            long copyBytes,
            int trials,
            PrintStream out) {
        Device local = new Device(localGpu, copyBytes);
        Device remote = new Device(remoteGpu, copyBytes);
        out.printf(
                "remote pinned memory (memAllocHost): %s%n%n", ((RemoteGpu) remoteGpu).sharedHostMemoryDescription());
        try (Arena arena = Arena.ofConfined()) {
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
            List<Series> all = List.of(
                    parallelSend,
                    parallelReceive,
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
            Series.sampleAlternating(all, WARM_UP_TRIALS, trials);
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
                    Row.bandwidth(streams + " send through cached buffers", parallelSend, copyBytes),
                    parallelRatio("  remote host->device vs " + streams, parallelSend, remoteToDevice, trials),
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

    static void printTable(List<Row> rows, String label, PrintStream out) {
        String format = "%-56s %24s %16s %12s %7s%n";
        out.printf(format, "measurement" + label, "median", "ratio range", "goal", "met");
        for (Row row : rows) {
            out.printf(format, row.name(), row.value(), row.range(), row.goal(), row.verdict());
        }
    }

    /** One line of the table. */
    record Row(String name, String value, String range, String goal, String verdict) {
        static Row time(String name, Series series) {
            return new Row(name, String.format("%.2f us", series.median() / 1e3), "", "", "");
        }

        /**
         * A time computed from each trial's samples, such as the difference of two series: the median over the
         * trials, and its range.
         */
        static Row derivedTime(String name, TrialRatio perTrial, int trials) {
            double[] nanos = new double[trials];
            for (int t = 0; t < trials; t++) {
                nanos[t] = perTrial.at(t);
            }
            double median = Medians.of(nanos);
            Arrays.sort(nanos);
            return new Row(
                    name,
                    String.format("%.2f us", median / 1e3),
                    String.format("%.2f - %.2f us", nanos[0] / 1e3, nanos[trials - 1] / 1e3),
                    "",
                    "");
        }

        static Row rate(String name, Series series) {
            return new Row(
                    name,
                    String.format("%.2f us (%.0f k/s)", series.median() / 1e3, 1e6 / series.median()),
                    "",
                    "",
                    "");
        }

        static Row bandwidth(String name, Series series, long bytes) {
            return new Row(
                    name,
                    String.format("%.1f ms (%.2f GB/s)", series.median() / 1e6, bytes / series.median()),
                    "",
                    "",
                    "");
        }

        /** A ratio shown as a plain number, or as a percentage when {@code percent}. */
        static Row ratio(
                String name,
                String goal,
                boolean percent,
                double threshold,
                TrialRatio perTrial,
                double median,
                int trials) {
            double[] ratios = new double[trials];
            for (int t = 0; t < trials; t++) {
                ratios[t] = perTrial.at(t);
            }
            Arrays.sort(ratios);
            String format = percent ? "%.0f %%" : "%.2f";
            double scale = percent ? 100 : 1;
            boolean met = percent ? median >= threshold : median <= threshold;
            return new Row(
                    name,
                    String.format(format, median * scale),
                    String.format(format, ratios[0] * scale) + " - "
                            + String.format(format, ratios[trials - 1] * scale),
                    goal,
                    met ? "yes" : "NO");
        }
    }

    @FunctionalInterface
    interface TrialRatio {
        double at(int trial);
    }

    /** Nanoseconds of one measurement, one sample per timed trial. */
    static final class Series {
        private final DoubleSupplier measurement;
        private final List<Double> samples = new ArrayList<>();

        Series(DoubleSupplier measurement) {
            this.measurement = measurement;
        }

        void sample(boolean record) {
            double nanos = measurement.getAsDouble();
            if (record) {
                samples.add(nanos);
            }
        }

        double at(int trial) {
            return samples.get(trial);
        }

        /**
         * Samples every series once per trial, after {@code warmUpTrials} unrecorded ones, in alternating order (odd
         * trials reversed), so that no series always runs first or last.
         */
        static void sampleAlternating(List<Series> all, int warmUpTrials, int trials) {
            for (int trial = 0; trial < warmUpTrials + trials; trial++) {
                List<Series> order = new ArrayList<>(all);
                if (trial % 2 != 0) {
                    Collections.reverse(order);
                }
                for (Series series : order) {
                    series.sample(trial >= warmUpTrials);
                }
            }
        }

        double median() {
            return Medians.of(samples);
        }
    }

    /**
     * The same operations on the local and on the remote vGPU: copies from and into the vGPU's page-locked memory
     * ({@link VirtualGpu#memAllocHost}), and from and into plain native memory of this process, as an app's own
     * buffers are.
     */
    static final class Device {
        private final VirtualGpu gpu;
        private final FunctionHandle empty;
        private final long bytes;
        private final long deviceBuffer;
        private final MemorySegment pinned;
        private final Arena ownMemory = Arena.ofShared();
        private final MemorySegment pageable;

        Device(VirtualGpu gpu, long bytes) {
            this.gpu = gpu;
            this.bytes = bytes;
            this.empty = gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.EMPTY_KERNEL);
            this.deviceBuffer = gpu.memAlloc(bytes);
            this.pinned = gpu.memAllocHost(bytes);
            this.pageable = ownMemory.allocate(bytes, 64);
            // touched once, so that no trial pays for the first write to a page
            pinned.fill((byte) 1);
            pageable.fill((byte) 1);
        }

        double launchAndSynchronizeNanos(int iterations) {
            long start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                gpu.launchKernel(empty, ONE, ONE, 0, StreamHandle.DEFAULT, KernelArgs.none());
                gpu.ctxSynchronize();
            }
            return (double) (System.nanoTime() - start) / iterations;
        }

        double asyncLaunchNanos(int iterations) {
            long start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                gpu.launchKernel(empty, ONE, ONE, 0, StreamHandle.DEFAULT, KernelArgs.none());
            }
            gpu.ctxSynchronize();
            return (double) (System.nanoTime() - start) / iterations;
        }

        /** The vGPU's page-locked memory, or this process's own ({@code pinned} false). */
        private MemorySegment host(boolean fromPinned) {
            return fromPinned ? pinned : pageable;
        }

        double copyToDeviceNanos(boolean fromPinned) {
            MemorySegment host = host(fromPinned);
            long start = System.nanoTime();
            gpu.memcpyHtoD(deviceBuffer, host, bytes);
            return System.nanoTime() - start;
        }

        double copyToHostNanos(boolean intoPinned) {
            MemorySegment host = host(intoPinned);
            long start = System.nanoTime();
            gpu.memcpyDtoH(host, deviceBuffer, bytes);
            return System.nanoTime() - start;
        }

        void free() {
            gpu.memFreeHost(pinned);
            gpu.memFree(deviceBuffer);
            ownMemory.close();
        }
    }

    /**
     * The processes the benchmark measures against: the GPU worker, started as a lender starts one
     * (its own site key and token), and the plain-socket baseline's peer, on the same host.
     */
    static final class BenchWorker implements AutoCloseable {
        private final ThrowawaySiteKey siteKey;
        private final LaunchedWorker process;
        private final PlainSocketPeer baseline;
        private final EventLoopGroup group = NettyTransport.newEventLoopGroup(
                1, "vgpu-bench-io", RemoteConfig.defaults().spinNanos());

        private BenchWorker(ThrowawaySiteKey siteKey, LaunchedWorker process, PlainSocketPeer baseline) {
            this.siteKey = siteKey;
            this.process = process;
            this.baseline = baseline;
        }

        static BenchWorker start(String host, String backend, int device) {
            return start(host, backend, device, false);
        }

        /** @param tls the worker speaks TLS with a self-signed certificate, which the session's token pins */
        static BenchWorker start(String host, String backend, int device, boolean tls) {
            ThrowawaySiteKey siteKey = ThrowawaySiteKey.create("vgpu-remote-bench");
            LaunchedWorker process = null;
            try {
                WorkerSpec spec = new WorkerSpec(
                        new Endpoint(host, 0),
                        backend,
                        device,
                        WORKER_ID,
                        siteKey.keyFile(),
                        tls ? Optional.of(new TlsConfig.SelfSigned()) : Optional.empty(),
                        Optional.of(Duration.ofSeconds(120)));
                process = new WorkerLauncher().launch(spec);
                PlainSocketPeer baseline = PlainSocketPeer.start(host);
                return new BenchWorker(siteKey, process, baseline);
            } catch (RuntimeException e) {
                if (process != null) {
                    process.close();
                }
                siteKey.close();
                throw e;
            }
        }

        /** A session on {@code window}, with a token for exactly that window (the worker checks it). */
        VirtualGpu connect(VaWindow window) {
            Endpoint at = process.endpoint();
            String token = siteKey.issuer()
                    .issue(
                            "remote-bench",
                            window.tokenWindow(),
                            WORKER_ID,
                            process.certificate(),
                            Duration.ofHours(12));
            return RemoteGpu.connect(
                    group,
                    new WorkerEndpoint(WORKER_ID, at.host(), at.port(), token, () -> {}),
                    window,
                    RemoteConfig.defaults(),
                    null);
        }

        /** Where the plain-socket baseline's peer listens. */
        Endpoint baseline() {
            return baseline.endpoint();
        }

        /** Where the peer's Netty echo server listens. */
        Endpoint nettyEcho() {
            return baseline.nettyEcho();
        }

        @Override
        public void close() {
            try {
                process.onExit().get(10, TimeUnit.SECONDS);
            } catch (Exception stillRunning) {
                // close() stops it
            }
            process.close();
            baseline.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            siteKey.close();
        }
    }
}
