package org.vgpu.bench.remote;

import java.io.PrintStream;
import java.util.List;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.lender.WorkerSpec;
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
 * {@value PlainSocketBaseline#PARALLEL_STREAMS} plain sockets moving the copy's bytes in parallel (Java NIO, one
 * thread each), the floor the striped bulk path is measured against, twice as well: each stream its share of host
 * memory of the copy's size, and through cached buffers. The header names the
 * path the session's bulk bytes took (in-band, shared memory or stripes). Every trial measures every row, in alternating order; the table shows medians, the
 * ratios the goals are stated in, the per-trial range of each ratio, and a plain verdict. It is a
 * measurement, never an assertion: the exit status says only whether the runs worked. With
 * {@code --backend emulated} the device is the CPU emulation and every figure says so.
 */
public final class RemoteBenchCommand implements Subcommand {

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
                        .desc("timed trials whose median is reported (default 9), after " + Series.WARM_UP_TRIALS
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
                out.println(Series.howSampled("client and worker", host, "", trials, "the range of each ratio"));
                List<Row> rows = RemoteBenchTable.measure(
                        worker, localGpu, remoteGpu, syncIterations, asyncIterations, copyBytes, trials, out);
                Row.printTable(rows, label, out);
                long straight = ((RemoteGpu) remoteGpu).chunksReadStraightIn();
                if (straight > 0) {
                    out.printf(
                            "device-to-host chunks the stripes read straight into this process's memory: %d%n",
                            straight);
                }
            }
        }
        return 0;
    }
}
