package org.vgpu.bench.remote;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * {@code vgpu remote-bench --tls-cost}: what TLS costs a remote vGPU. Two worker processes on the same host, one in
 * plain TCP and one with TLS 1.3 as a tracker's holder runs it (a self-signed certificate made at start, which the
 * session's token pins), measured in the same run, trial by trial in alternating order: the launch + synchronize round
 * trip and both copy directions, each with the ratio TLS / plain and its range over the trials.
 */
final class TlsCost {
    private static final int WARM_UP_TRIALS = 2;

    private final String host;
    private final String backend;
    private final int device;
    private final int trials;
    private final int syncIterations;
    private final long copyBytes;

    TlsCost(String host, String backend, int device, int trials, int syncIterations, long copyBytes) {
        this.host = host;
        this.backend = backend;
        this.device = device;
        this.trials = trials;
        this.syncIterations = syncIterations;
        this.copyBytes = copyBytes;
    }

    int run(PrintStream out) {
        try (RemoteBenchCommand.BenchWorker plainWorker =
                        RemoteBenchCommand.BenchWorker.start(host, backend, device, false);
                RemoteBenchCommand.BenchWorker tlsWorker =
                        RemoteBenchCommand.BenchWorker.start(host, backend, device, true);
                VirtualGpu plainGpu = plainWorker.connect(VaWindow.forVgpu(0));
                VirtualGpu tlsGpu = tlsWorker.connect(VaWindow.forVgpu(0))) {
            boolean emulated = backend.equals("emulated");
            out.printf(
                    "vgpu remote-bench --tls-cost: %s device %d, workers: plain %s; TLS %s; transport %s; Java %s%n",
                    backend,
                    device,
                    ((RemoteGpu) plainGpu).workerDescription(),
                    ((RemoteGpu) tlsGpu).workerDescription(),
                    NettyTransport.describe(),
                    Runtime.version());
            if (emulated) {
                out.println("CPU EMULATION, transport only: the device is the CPU emulation, so these figures measure"
                        + " the remote runtime, TLS and this machine's network stack, not a GPU");
            }
            out.printf(
                    "client and workers are separate processes on %s, %d cores; tuning: %s; %d trials after %d warm-up"
                            + " trials; medians, and the range of each ratio over the trials%n%n",
                    host,
                    Runtime.getRuntime().availableProcessors(),
                    RemoteTuning.current().describe(),
                    trials,
                    WARM_UP_TRIALS);
            RemoteBenchCommand.printTable(measure(plainGpu, tlsGpu), emulated ? " [CPU EMULATION]" : "", out);
        }
        return 0;
    }

    private List<RemoteBenchCommand.Row> measure(VirtualGpu plainGpu, VirtualGpu tlsGpu) {
        RemoteBenchCommand.Device plain = new RemoteBenchCommand.Device(plainGpu, copyBytes);
        RemoteBenchCommand.Device tls = new RemoteBenchCommand.Device(tlsGpu, copyBytes);
        try {
            // copies of the app's own memory, whose bytes cross the connection: what TLS may cost
            RemoteBenchCommand.Series plainSync =
                    new RemoteBenchCommand.Series(() -> plain.launchAndSynchronizeNanos(syncIterations));
            RemoteBenchCommand.Series tlsSync =
                    new RemoteBenchCommand.Series(() -> tls.launchAndSynchronizeNanos(syncIterations));
            RemoteBenchCommand.Series plainToDevice =
                    new RemoteBenchCommand.Series(() -> plain.copyToDeviceNanos(false));
            RemoteBenchCommand.Series tlsToDevice = new RemoteBenchCommand.Series(() -> tls.copyToDeviceNanos(false));
            RemoteBenchCommand.Series plainToHost = new RemoteBenchCommand.Series(() -> plain.copyToHostNanos(false));
            RemoteBenchCommand.Series tlsToHost = new RemoteBenchCommand.Series(() -> tls.copyToHostNanos(false));
            List<RemoteBenchCommand.Series> all =
                    List.of(plainSync, tlsSync, plainToDevice, tlsToDevice, plainToHost, tlsToHost);
            RemoteBenchCommand.Series.sampleAlternating(all, WARM_UP_TRIALS, trials);
            String mib = (copyBytes >> 20) + " MiB";
            return List.of(
                    RemoteBenchCommand.Row.time("remote launch + synchronize, plain TCP", plainSync),
                    RemoteBenchCommand.Row.time("remote launch + synchronize, TLS 1.3", tlsSync),
                    ratio("  round trip: TLS / plain (time)", tlsSync, plainSync),
                    RemoteBenchCommand.Row.bandwidth(
                            "remote host->device " + mib + ", plain TCP", plainToDevice, copyBytes),
                    RemoteBenchCommand.Row.bandwidth(
                            "remote host->device " + mib + ", TLS 1.3", tlsToDevice, copyBytes),
                    ratio("  host->device bandwidth: TLS / plain", plainToDevice, tlsToDevice),
                    RemoteBenchCommand.Row.bandwidth(
                            "remote device->host " + mib + ", plain TCP", plainToHost, copyBytes),
                    RemoteBenchCommand.Row.bandwidth("remote device->host " + mib + ", TLS 1.3", tlsToHost, copyBytes),
                    ratio("  device->host bandwidth: TLS / plain", plainToHost, tlsToHost));
        } finally {
            plain.free();
            tls.free();
        }
    }

    /** {@code numerator / denominator} of the medians, with its range over the trials (no goal: a cost). */
    private RemoteBenchCommand.Row ratio(
            String name, RemoteBenchCommand.Series numerator, RemoteBenchCommand.Series denominator) {
        double[] ratios = new double[trials];
        for (int t = 0; t < trials; t++) {
            ratios[t] = numerator.at(t) / denominator.at(t);
        }
        Arrays.sort(ratios);
        return new RemoteBenchCommand.Row(
                name,
                String.format("%.2f", numerator.median() / denominator.median()),
                String.format("%.2f - %.2f", ratios[0], ratios[trials - 1]),
                "",
                "");
    }
}
