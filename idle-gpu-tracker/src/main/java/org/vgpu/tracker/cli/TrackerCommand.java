package org.vgpu.tracker.cli;

import static org.vgpu.common.contract.BridgeContract.MOVE_OK;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.siteconfig.cli.TrackerOptions;
import org.vgpu.tracker.Tracker;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.LedgerException;
import org.vgpu.tracker.metrics.MetricsHttpServer;
import org.vgpu.tracker.metrics.TrackerMetrics;
import org.vgpu.tracker.server.MungeVerifier;
import org.vgpu.tracker.server.TrackerDaemon;
import org.vgpu.tracker.slurm.HolderOutput;
import org.vgpu.tracker.slurm.SlurmCommands;
import org.vgpu.tracker.slurm.SlurmControl;
import org.vgpu.tracker.slurm.SlurmException;

/**
 * {@code vgpu tracker [--config FILE]}: the idle-GPU tracker daemon, reading the site configuration from the file
 * every vgpu command reads by default. Runs until SIGTERM/SIGINT; exits
 * 1 with the reason when it cannot start (bad configuration, unreadable ledger, Slurm unreachable,
 * a partition Slurm does not have, the socket in use) or when its ledger fails later.
 */
public final class TrackerCommand implements Subcommand {
    static final Path DEFAULT_LEDGER = Path.of("/var/lib/vgpu/tracker.ledger");
    /** How often the tracker reads Slurm and plans, unless {@code --poll} says otherwise. */
    public static final int DEFAULT_POLL_SECONDS = 2;

    private static final int DEFAULT_SLURM_TIMEOUT_SECONDS = 20;

    @Override
    public String name() {
        return "tracker";
    }

    @Override
    public String summary() {
        return "run the idle-GPU tracker: assemble held vgpu jobs from local and borrowed GPUs";
    }

    @Override
    public Options options() {
        Tracker.Settings defaults = Tracker.Settings.defaults();
        return new Options()
                .addOption(Option.builder()
                        .longOpt("config")
                        .hasArg()
                        .argName("FILE")
                        .desc("the site configuration (default " + TrackerOptions.DEFAULT_CONFIG + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("ledger")
                        .hasArg()
                        .argName("FILE")
                        .desc("the journal of every assembly and lend (default " + DEFAULT_LEDGER + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("listen")
                        .hasArg()
                        .argName("HOST:PORT")
                        .desc("where the socket listens (default: the configuration's tracker)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("metrics")
                        .hasArg()
                        .argName("HOST:PORT")
                        .desc("where to serve Prometheus' /metrics, or 'off' (default: the configuration's [tracker]"
                                + " metrics, else off)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("poll")
                        .hasArg()
                        .argName("SECONDS")
                        .desc("how often Slurm is read (default " + DEFAULT_POLL_SECONDS + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("slurm-timeout")
                        .hasArg()
                        .argName("SECONDS")
                        .desc("limit for one Slurm command (default " + DEFAULT_SLURM_TIMEOUT_SECONDS + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("holder-timeout")
                        .hasArg()
                        .argName("SECONDS")
                        .desc("how long holder jobs may stay pending before an assembly is planned again (default "
                                + defaults.holderTimeout().toSeconds() + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("worker-backend")
                        .hasArg()
                        .argName("NAME")
                        .desc(
                                "what holder jobs' workers drive: native (the GPU Slurm gives the holder) or emulated (the"
                                        + " CPU emulation, for testbeds without GPUs; default native)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("worker-idle-timeout")
                        .hasArg()
                        .argName("SECONDS")
                        .desc(
                                "how long a holder's worker waits for its job's session, and for each of its frames (default "
                                        + defaults.workerIdleTimeout().toSeconds() + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("holder-output")
                        .hasArg()
                        .argName("PATH")
                        .desc(
                                "where holder jobs write, sbatch's --output on the holder's node (%j: the holder's id; default /dev/null, which a warning names)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("auth")
                        .hasArg()
                        .argName("MODE")
                        .desc("none or munge, as the SPANK bridge's auth= (default none): munge checks every request's"
                                + " credential with unmunge")
                        .get())
                .addOption(Option.builder()
                        .longOpt("munge-socket")
                        .hasArg()
                        .argName("PATH")
                        .desc("munged's socket, with --auth munge (default: libmunge's)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("unmunge")
                        .hasArg()
                        .argName("PATH")
                        .desc("the unmunge program, with --auth munge (default unmunge on the PATH)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("trusted-user")
                        .hasArg()
                        .argName("NAME")
                        .desc("besides root and a job's owner, who may ask for any job's assembly: Slurm's SlurmUser"
                                + " (repeatable)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("token-ttl")
                        .hasArg()
                        .argName("SECONDS")
                        .desc("how long a job's worker tokens stay valid for opening a session (default "
                                + defaults.tokenTtl().toSeconds() + ")")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        if (!line.getArgList().isEmpty()) {
            throw new ParseException("unexpected operand(s): " + String.join(" ", line.getArgList()));
        }
        Tracker.Settings defaults = Tracker.Settings.defaults();
        Duration poll = seconds(line, "poll", DEFAULT_POLL_SECONDS);
        Duration slurmTimeout = seconds(line, "slurm-timeout", DEFAULT_SLURM_TIMEOUT_SECONDS);
        Tracker.Settings settings = new Tracker.Settings(
                seconds(line, "holder-timeout", defaults.holderTimeout().toSeconds()),
                seconds(line, "token-ttl", defaults.tokenTtl().toSeconds()),
                CommandLines.choice(line, "worker-backend", defaults.workerBackend(), List.of("native", "emulated")),
                seconds(
                        line,
                        "worker-idle-timeout",
                        defaults.workerIdleTimeout().toSeconds()));
        Path ledgerFile = Path.of(line.getOptionValue("ledger", DEFAULT_LEDGER.toString()));
        SiteConfig site = SiteConfigReader.readAndCheckFiles(
                Path.of(line.getOptionValue("config", TrackerOptions.DEFAULT_CONFIG)));
        Endpoint listen = site.tracker();
        if (line.hasOption("listen")) {
            listen = endpoint(line, "listen");
        }
        Optional<Endpoint> metricsAddress = site.metrics();
        if (line.hasOption("metrics")) {
            metricsAddress = line.getOptionValue("metrics").equals("off")
                    ? Optional.empty()
                    : Optional.of(endpoint(line, "metrics"));
        }
        String auth = CommandLines.choice(line, "auth", "none", List.of("none", "munge"));
        if (auth.equals("none") && (line.hasOption("munge-socket") || line.hasOption("unmunge"))) {
            throw new ParseException("--munge-socket and --unmunge belong to --auth munge");
        }
        Optional<MungeVerifier> munge = auth.equals("munge")
                ? Optional.of(new MungeVerifier(
                        Path.of(line.getOptionValue("unmunge", "unmunge")),
                        Optional.ofNullable(line.getOptionValue("munge-socket")).map(Path::of)))
                : Optional.empty();
        Set<String> trustedUsers =
                line.hasOption("trusted-user") ? Set.of(line.getOptionValues("trusted-user")) : Set.of();
        HolderOutput holderOutput = new HolderOutput(line.getOptionValue("holder-output", HolderOutput.DISCARDED));
        if (holderOutput.discarded()) {
            err.println("vgpu tracker: holder jobs' output is discarded (--holder-output " + HolderOutput.DISCARDED
                    + "): a holder whose worker cannot start leaves no trace; the vgpu package's unit writes it to"
                    + " /var/log/vgpu/holder-%j.out");
        }
        SlurmControl slurm = new SlurmCommands(
                slurmTimeout, site.lendPartition(), site.lendQos(), site.holdersAsBorrower(), holderOutput);
        TrackerDaemon daemon;
        TrackerMetrics metrics;
        Ledger ledger = null;
        try {
            // The ledger first: a line it cannot read is found (FILE:LINE, the file left as it is) without Slurm.
            ledger = Ledger.open(ledgerFile);
            for (String partition : List.of(site.lendPartition(), site.slurm().jobPartition())) {
                if (!slurm.partitionExists(partition)) {
                    err.println(
                            "vgpu tracker: Slurm has no partition '" + partition + "' (named in " + site.source()
                                    + "); add it to slurm.conf (vgpu config render --what slurm.conf) or fix the configuration");
                    ledger.close();
                    return 1;
                }
            }
            Tracker tracker =
                    new Tracker(site, slurm, ledger, SiteKey.load(site.tokenKeyFile()), settings, Clock.systemUTC());
            // Counts what the migration hook reports; its gauges read the tracker at each scrape.
            metrics = new TrackerMetrics(tracker::status);
            TrackerMetrics counted = metrics;
            tracker.onMigrationEnded(move -> counted.migrationFinished(
                    move.direction(),
                    move.state().equals(MOVE_OK) ? "done" : move.state().replace('-', '_'),
                    move.blockedMs() / 1000.0));
            daemon = TrackerDaemon.start(tracker, ledger, listen, poll, munge, trustedUsers);
        } catch (LedgerException | SlurmException e) {
            if (ledger != null) {
                ledger.close();
            }
            err.println("vgpu tracker: " + e.detail());
            return 1;
        }
        Optional<MetricsHttpServer> metricsServer;
        try {
            metricsServer = metricsAddress.map(metrics::serve);
        } catch (NetworkException e) {
            daemon.close();
            err.println("vgpu tracker: " + e.detail());
            return 1;
        }
        Runtime.getRuntime()
                .addShutdownHook(Thread.ofPlatform().name("tracker-shutdown").unstarted(() -> {
                    metricsServer.ifPresent(MetricsHttpServer::close);
                    daemon.close();
                }));
        out.println("vgpu tracker listening on " + daemon.endpoint() + ", ledger " + ledgerFile.toAbsolutePath()
                + ", polling Slurm every " + poll.toSeconds() + " s, auth " + auth + ", metrics "
                + metricsAddress
                        .map(address -> "on http://" + address + "/metrics")
                        .orElse("off"));
        out.flush();
        try {
            RuntimeException fatal = daemon.awaitStop();
            if (fatal != null) {
                err.println("vgpu tracker: stopped: "
                        + (fatal instanceof VgpuFailure failure
                                ? failure.detail()
                                : "an internal error, logged above"));
                return 1;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            daemon.close();
        } finally {
            metricsServer.ifPresent(MetricsHttpServer::close);
        }
        return 0;
    }

    private static Endpoint endpoint(CommandLine line, String option) throws ParseException {
        try {
            return Endpoint.parse(line.getOptionValue(option));
        } catch (VgpuFailure e) {
            throw new ParseException("--" + option + ": " + e.detail());
        }
    }

    private static Duration seconds(CommandLine line, String option, long fallback) throws ParseException {
        return Duration.ofSeconds(CommandLines.intValue(line, option, (int) fallback, 1));
    }
}
