package org.vgpu.runtime.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;
import org.vgpu.runtime.remote.lender.Lender;
import org.vgpu.runtime.remote.lender.LenderConfig;
import org.vgpu.runtime.remote.lender.WorkerLauncher;
import org.vgpu.runtime.remote.lender.WorkerSpec;
import org.vgpu.runtime.remote.security.TlsConfig;

/**
 * {@code vgpu lender}: the daemon of a lender node. Keeps warm GPU workers per device and hands
 * them out through its control socket (see {@link Lender}); runs until SIGTERM or SIGINT, then
 * stops every worker it started.
 */
public final class LenderCommand implements Subcommand {
    /**
     * Warm workers wait for a client this long before they end and are replaced: long enough that
     * an idle lender does not restart a JVM and a CUDA context every few seconds, short enough
     * that a lent worker whose job never connects frees its GPU within minutes.
     */
    static final Duration DEFAULT_WORKER_IDLE_TIMEOUT = Duration.ofMinutes(5);

    @Override
    public String name() {
        return "lender";
    }

    @Override
    public String summary() {
        return "lend this node's GPUs outside the tracker: keep warm GPU workers, hand them out on a control socket"
                + " whose requests are signed with the site key";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("listen")
                        .hasArg()
                        .argName("HOST:PORT")
                        .desc("control socket (required); workers listen on the same host")
                        .get())
                .addOption(Option.builder()
                        .longOpt("backend")
                        .hasArg()
                        .argName("NAME")
                        .desc("native or emulated (default native)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("devices")
                        .hasArg()
                        .argName("D[,D...]")
                        .desc("devices this node lends, e.g. 0,1 (required)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("key-file")
                        .hasArg()
                        .argName("FILE")
                        .desc(
                                "site key file (base64, mode 600): control requests must be signed with it, workers check session"
                                        + " tokens with it (required)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("pool")
                        .hasArg()
                        .argName("N")
                        .desc("warm workers kept per device (default 1, 0 to start each on request)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("max-lent")
                        .hasArg()
                        .argName("N")
                        .desc("workers per device handed out at once (default 1: a GPU is never lent twice)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("worker-idle-timeout")
                        .hasArg()
                        .argName("SECONDS")
                        .desc("how long a warm worker waits unused before it is replaced, and a lent one for its job"
                                + " (each worker's --idle-timeout; default " + DEFAULT_WORKER_IDLE_TIMEOUT.toSeconds()
                                + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("worker-startup-timeout")
                        .hasArg()
                        .argName("SECONDS")
                        .desc("time a worker has to report listening before it is killed (default "
                                + WorkerLauncher.DEFAULT_STARTUP_TIMEOUT.toSeconds() + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tls-cert")
                        .hasArg()
                        .argName("PEM")
                        .desc("workers' TLS certificate chain; with --tls-key, worker connections use TLS")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tls-key")
                        .hasArg()
                        .argName("PEM")
                        .desc("workers' TLS private key (unencrypted PKCS#8)")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        LenderConfig config = config(line);
        int startupSeconds = CommandLines.intValue(
                line, "worker-startup-timeout", (int) WorkerLauncher.DEFAULT_STARTUP_TIMEOUT.toSeconds(), 1);
        WorkerLauncher launcher =
                new WorkerLauncher(WorkerLauncher.WORKER_MAIN_CLASS, Duration.ofSeconds(startupSeconds));
        Lender lender = Lender.start(config, launcher);
        Runtime.getRuntime()
                .addShutdownHook(Thread.ofPlatform().name("lender-shutdown").unstarted(lender::close));
        out.println("vgpu lender listening " + lender.controlEndpoint());
        out.flush();
        try {
            lender.awaitClosed();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            lender.close();
        }
        return 0;
    }

    /** The validated settings; a value that makes no sense is a usage error. */
    static LenderConfig config(CommandLine line) throws ParseException {
        for (String option : List.of("listen", "devices", "key-file")) {
            if (!line.hasOption(option)) {
                throw new ParseException("--" + option + " is required");
            }
        }
        String backend = CommandLines.choice(line, "backend", "native", WorkerSpec.BACKENDS);
        int poolSize = CommandLines.intValue(line, "pool", 1, 0);
        int maxLent = CommandLines.intValue(line, "max-lent", 1, 1);
        Duration idleTimeout = Duration.ofSeconds(
                CommandLines.intValue(line, "worker-idle-timeout", (int) DEFAULT_WORKER_IDLE_TIMEOUT.toSeconds(), 1));
        if (line.hasOption("tls-cert") != line.hasOption("tls-key")) {
            throw new ParseException("--tls-cert and --tls-key go together: give both for TLS, neither without");
        }
        Optional<TlsConfig.Server> tls = line.hasOption("tls-cert")
                ? Optional.of(new TlsConfig.Server(
                        Path.of(line.getOptionValue("tls-cert")), Path.of(line.getOptionValue("tls-key"))))
                : Optional.empty();
        Endpoint listen;
        try {
            listen = Endpoint.parse(line.getOptionValue("listen"));
        } catch (VgpuFailure e) {
            throw new ParseException("--listen: " + e.detail());
        }
        try {
            return new LenderConfig(
                    listen,
                    backend,
                    devices(line.getOptionValue("devices")),
                    Path.of(line.getOptionValue("key-file")),
                    poolSize,
                    maxLent,
                    Optional.of(idleTimeout),
                    tls);
        } catch (VgpuFailure e) {
            throw new ParseException(e.detail());
        }
    }

    private static List<Integer> devices(String list) throws ParseException {
        List<Integer> devices = new ArrayList<>();
        for (String item : list.split(",", -1)) {
            try {
                devices.add(Integer.parseInt(item.strip()));
            } catch (NumberFormatException e) {
                throw new ParseException("--devices needs numbers separated by commas, e.g. 0,1; got '" + list + "'");
            }
        }
        return devices;
    }
}
