package org.vgpu.bench.remote;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * {@code vgpu remote-bench --tls-cost}: what TLS costs a remote vGPU. Two worker processes on the same host, one in
 * plain TCP and one with TLS 1.3 as a tracker's holder runs it (a self-signed certificate made at start, which the
 * session's token pins), measured in the same run, trial by trial in alternating order: the launch + synchronize round
 * trip and both copy directions, each with the ratio TLS / plain and its range over the trials.
 */
final class TlsCost {

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
        try (BenchWorker plainWorker = BenchWorker.start(host, backend, device, false);
                BenchWorker tlsWorker = BenchWorker.start(host, backend, device, true);
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
            out.printf("%s%n%n", Series.howSampled("client and workers", host, "", trials, "the range of each ratio"));
            Row.printTable(measure(plainGpu, tlsGpu), emulated ? " [CPU EMULATION]" : "", out);
        }
        return 0;
    }

    private List<Row> measure(VirtualGpu plainGpu, VirtualGpu tlsGpu) {
        BenchDevice plain = new BenchDevice(plainGpu, copyBytes);
        BenchDevice tls = new BenchDevice(tlsGpu, copyBytes);
        try {
            // copies of the app's own memory, whose bytes cross the connection: what TLS may cost
            Series plainSync = new Series(() -> plain.launchAndSynchronizeNanos(syncIterations));
            Series tlsSync = new Series(() -> tls.launchAndSynchronizeNanos(syncIterations));
            Series plainToDevice = new Series(() -> plain.copyToDeviceNanos(false));
            Series tlsToDevice = new Series(() -> tls.copyToDeviceNanos(false));
            Series plainToHost = new Series(() -> plain.copyToHostNanos(false));
            Series tlsToHost = new Series(() -> tls.copyToHostNanos(false));
            List<Series> all = List.of(plainSync, tlsSync, plainToDevice, tlsToDevice, plainToHost, tlsToHost);
            Series.sampleAlternating(all, Series.WARM_UP_TRIALS, trials);
            String mib = (copyBytes >> 20) + " MiB";
            return List.of(
                    Row.time("remote launch + synchronize, plain TCP", plainSync),
                    Row.time("remote launch + synchronize, TLS 1.3", tlsSync),
                    ratio("  round trip: TLS / plain (time)", tlsSync, plainSync),
                    Row.bandwidth("remote host->device " + mib + ", plain TCP", plainToDevice, copyBytes),
                    Row.bandwidth("remote host->device " + mib + ", TLS 1.3", tlsToDevice, copyBytes),
                    ratio("  host->device bandwidth: TLS / plain", plainToDevice, tlsToDevice),
                    Row.bandwidth("remote device->host " + mib + ", plain TCP", plainToHost, copyBytes),
                    Row.bandwidth("remote device->host " + mib + ", TLS 1.3", tlsToHost, copyBytes),
                    ratio("  device->host bandwidth: TLS / plain", plainToHost, tlsToHost));
        } finally {
            plain.free();
            tls.free();
        }
    }

    /** {@code numerator / denominator} of the medians, with its range over the trials (no goal: a cost). */
    private Row ratio(String name, Series numerator, Series denominator) {
        TrialRatio perTrial = t -> numerator.at(t) / denominator.at(t);
        double[] ratios = perTrial.eachOf(trials);
        Arrays.sort(ratios);
        return new Row(
                name,
                String.format("%.2f", numerator.median() / denominator.median()),
                String.format("%.2f - %.2f", ratios[0], ratios[trials - 1]),
                "",
                "");
    }
}
