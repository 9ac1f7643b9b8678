package org.vgpu.bench.remote;

import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;

import org.vgpu.common.net.Endpoint;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * {@code vgpu remote-bench --round-trip-ladder}: where a remote call's round trip goes, one rung at a time, each rung
 * a process pair of the same host measured in the same run, trial by trial in alternating order. From the bottom:
 * 64-byte round trips through plain Java sockets waiting in blocking reads, then retrying non-blocking reads (no
 * thread sleeps in the kernel: Java's floor, to set beside a C program's that {@code testbed/gpu/round-trip-floor.sh}
 * measures), then through Netty with the runtime's event loops and the caller's hand-off to its loop ({@link
 * NettyEcho}), and last a synchronize with nothing queued on a remote vGPU less the same on a local one. The steps
 * between the rungs are printed: what Netty and the hand-off add to the sockets, and what the runtime adds to Netty
 * (the worker's GPU thread and the protocol).
 */
final class RoundTripLadder {

    private final String host;
    private final String backend;
    private final int device;
    private final int workerDevice;
    private final int trials;
    private final int iterations;

    RoundTripLadder(String host, String backend, int device, int workerDevice, int trials, int iterations) {
        this.host = host;
        this.backend = backend;
        this.device = device;
        this.workerDevice = workerDevice;
        this.trials = trials;
        this.iterations = iterations;
    }

    int run(GpuBackend local, PrintStream out) {
        EventLoopGroup echoClient = NettyTransport.newEventLoopGroup(
                1, "vgpu-bench-echo-client", RemoteTuning.current().spinNanos());
        try (BenchWorker worker = BenchWorker.start(host, backend, workerDevice);
                VirtualGpu localGpu = local.open(device, VaWindow.forVgpu(0));
                VirtualGpu remoteGpu = worker.connect(VaWindow.forVgpu(0))) {
            out.printf(
                    "vgpu remote-bench --round-trip-ladder: %s device %d, worker on device %d: %s; transport %s;"
                            + " Java %s%n",
                    backend,
                    device,
                    workerDevice,
                    ((RemoteGpu) remoteGpu).workerDescription(),
                    NettyTransport.describe(),
                    Runtime.version());
            if (local.isEmulation()) {
                out.println("CPU EMULATION: the device is the CPU emulation, so the synchronize rungs measure the"
                        + " remote runtime and this machine's network stack, not a GPU");
            }
            out.printf(
                    "%s%n%n",
                    Series.howSampled(
                            "client, worker and socket peers",
                            host,
                            iterations + " round trips per trial",
                            trials,
                            "each step's range"));
            Row.printTable(
                    measure(worker, echoClient, localGpu, remoteGpu),
                    local.isEmulation() ? " [CPU EMULATION]" : "",
                    out);
        } finally {
            echoClient.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
        return 0;
    }

    private List<Row> measure(
            BenchWorker worker, EventLoopGroup echoClient, VirtualGpu localGpu, VirtualGpu remoteGpu) {
        Endpoint plain = worker.baseline();
        Endpoint echo = worker.nettyEcho();
        Series blocking = new Series(() -> PlainSocketBaseline.roundTripNanos(plain.host(), plain.port(), iterations));
        Series spinning =
                new Series(() -> PlainSocketBaseline.spinningRoundTripNanos(plain.host(), plain.port(), iterations));
        Series netty = new Series(() -> NettyEcho.roundTripNanos(echoClient, echo.host(), echo.port(), iterations));
        Series localSync = new Series(() -> synchronizeNanos(localGpu));
        Series remoteSync = new Series(() -> synchronizeNanos(remoteGpu));
        Series.sampleAlternating(
                List.of(blocking, spinning, netty, localSync, remoteSync), Series.WARM_UP_TRIALS, trials);
        return List.of(
                Row.time("plain socket 64 B round trip, blocking reads", blocking),
                Row.time("plain socket 64 B round trip, spinning reads", spinning),
                Row.time("Netty 64 B round trip, the runtime's event loops", netty),
                Row.time("local synchronize, nothing queued", localSync),
                Row.time("remote synchronize, nothing queued", remoteSync),
                Row.derivedTime(
                        "  spinning sockets -> Netty and the caller's hand-off",
                        t -> netty.at(t) - spinning.at(t),
                        trials),
                Row.derivedTime(
                        "  Netty -> the runtime (remote - local synchronize)",
                        t -> remoteSync.at(t) - localSync.at(t) - netty.at(t),
                        trials),
                Row.derivedTime(
                        "  spinning sockets -> the runtime, all told",
                        t -> remoteSync.at(t) - localSync.at(t) - spinning.at(t),
                        trials));
    }

    private double synchronizeNanos(VirtualGpu gpu) {
        long start = System.nanoTime();
        for (int i = 0; i < iterations; i++) {
            gpu.ctxSynchronize();
        }
        return (double) (System.nanoTime() - start) / iterations;
    }
}
