package org.vgpu.runtime.remote.worker;

import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Optional;
import java.util.function.Supplier;

import io.netty.handler.ssl.SslContext;
import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.InputException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.CertificatePin;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenVerifier;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.lender.WorkerLauncher;
import org.vgpu.runtime.remote.lender.WorkerSpec;
import org.vgpu.runtime.remote.security.SelfSignedIdentity;
import org.vgpu.runtime.remote.security.TlsConfig;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * {@code vgpu worker}: the process that serves one borrowed vGPU. It checks the session token with
 * the site key, serves ONE session on one device, and exits when the session ends, the client
 * disappears or stays silent for the idle timeout (a holder job's worker serves sessions one after
 * another instead, see below). Launchers rely on its stdout: exactly the line
 * {@code vgpu-worker listening HOST:PORT} once it accepts connections (with {@code --tls-self-signed}, after the line
 * {@code vgpu-worker certificate HEX}, its certificate's SHA-256 fingerprint), and
 * {@code vgpu-worker served calls=N bytes_in=N bytes_out=N busy_ms=N} when it is done; everything
 * else goes to stderr. Exit status 0 when the client ended the session with a goodbye, 1 otherwise.
 *
 * <p>In a tracker's holder job it is started with {@code --tracker HOST:PORT --lend JOB:VGPU} (and
 * {@code --tls-self-signed} unless the site turned worker TLS off): once listening it tells the tracker
 * {@code worker JOB VGPU HOST:PORT WORKER-ID PROOF}, where the proof is a short-lived token signed with the site key it
 * already reads (so only a holder, which has the key, can claim a lend) that pins its certificate (so the tracker
 * hands the job that pin with its tokens), and it exits at once when the tracker does not take it. It then serves the
 * job's sessions one after another (each step of the job, and the app after {@code vgpu run}'s checks,
 * opens the vGPU again; a session that ends because the vGPU moved away is no failure) until the
 * tracker cancels the holder; the idle timeout bounds each session's silence, not the holder's life. On SIGTERM
 * (its holder cancelled, by the tracker or an admin) it tells the tracker {@code worker-leaving} and serves on
 * until its session moves away or 25 s pass ({@link HolderLeaving}).
 *
 * <p>Runs without the launcher on the class path: {@code java -cp ... org.vgpu.runtime.remote.worker.WorkerCommand}.
 */
public final class WorkerCommand implements Subcommand {
    /** Asked when the command runs, not when it is built: the launcher builds every command, also to show help. */
    private final Supplier<RemoteTuning> tuning;

    public static void main(String[] args) {
        System.exit(SubcommandRunner.run(new WorkerCommand(), args, System.out, System.err));
    }

    /** A worker tuned as this process's system properties say. */
    public WorkerCommand() {
        this(RemoteTuning::current);
    }

    /** A worker tuned as {@code tuning} says, for tests. */
    WorkerCommand(Supplier<RemoteTuning> tuning) {
        this.tuning = tuning;
    }

    @Override
    public String name() {
        return "worker";
    }

    @Override
    public String summary() {
        return "serve a remote vGPU on one local GPU (started by the lender, or in a holder job)";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("listen")
                        .hasArg()
                        .argName("HOST:PORT")
                        .required()
                        .desc("address to listen on; port 0 picks a free one, printed on the listening line")
                        .get())
                .addOption(Option.builder()
                        .longOpt("backend")
                        .hasArg()
                        .argName("NAME")
                        .desc("native or emulated (default native)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("device")
                        .hasArg()
                        .argName("D")
                        .desc("device to serve (default 0)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("worker-id")
                        .hasArg()
                        .argName("ID")
                        .required()
                        .desc("this worker's id, which session tokens must name")
                        .get())
                .addOption(Option.builder()
                        .longOpt("key-file")
                        .hasArg()
                        .argName("FILE")
                        .desc("site key file that session tokens are checked with (or --key-env)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("key-env")
                        .hasArg()
                        .argName("VARIABLE")
                        .desc(
                                "environment variable holding the key that session tokens are checked with, base64: in"
                                        + " a holder job, the key of its one lend that the tracker put into the holder's script")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tls-cert")
                        .hasArg()
                        .argName("PEM")
                        .desc("TLS certificate chain; with --tls-key, connections use TLS")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tls-key")
                        .hasArg()
                        .argName("PEM")
                        .desc("TLS private key (PKCS#8)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tls-self-signed")
                        .desc("connections use TLS with a fresh self-signed certificate made at start; its SHA-256"
                                + " fingerprint is printed, and told the tracker in the proof (a holder's worker)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("idle-timeout")
                        .hasArg()
                        .argName("SECONDS")
                        .desc("end a session after this long without a frame from the client; without --tracker, also"
                                + " give up when no client opens one within it (default "
                                + WorkerConfig.DEFAULT_IDLE_TIMEOUT.toSeconds() + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tracker")
                        .hasArg()
                        .argName("HOST:PORT")
                        .desc("in a holder job: the tracker to tell where this worker listens (with --lend)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("lend")
                        .hasArg()
                        .argName("JOB:VGPU")
                        .desc("in a holder job: the job and vGPU this worker serves (with --tracker)")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        // First, so that a tuning property the worker cannot use stops it before it opens anything.
        RemoteTuning workerTuning = tuning.get();
        Endpoint listen;
        try {
            listen = Endpoint.parse(line.getOptionValue("listen"));
        } catch (VgpuFailure e) {
            throw new ParseException("--listen: " + e.detail());
        }
        String backendName = CommandLines.choice(line, "backend", "native", WorkerSpec.BACKENDS);
        int device = CommandLines.intValue(line, "device", 0, 0);
        int idleSeconds =
                CommandLines.intValue(line, "idle-timeout", (int) WorkerConfig.DEFAULT_IDLE_TIMEOUT.toSeconds(), 1);
        if (line.hasOption("tls-cert") != line.hasOption("tls-key")) {
            throw new ParseException("--tls-cert and --tls-key go together");
        }
        if (line.hasOption("tls-cert") && line.hasOption("tls-self-signed")) {
            throw new ParseException("--tls-self-signed makes its own certificate: give it or --tls-cert, not both");
        }
        if (line.hasOption("tracker") != line.hasOption("lend")) {
            throw new ParseException("--tracker and --lend go together");
        }
        HolderAnnouncement announcement = line.hasOption("tracker")
                ? HolderAnnouncement.parse(line.getOptionValue("tracker"), line.getOptionValue("lend"))
                : null;
        if (line.hasOption("key-file") == line.hasOption("key-env")) {
            throw new ParseException("give the key with --key-file or --key-env (one of them)");
        }
        WorkerConfig config = new WorkerConfig(
                listen.host(),
                listen.port(),
                device,
                line.getOptionValue("worker-id"),
                Duration.ofSeconds(idleSeconds),
                workerTuning.spinNanos());

        SiteKey key = key(line);
        TokenVerifier verifier = new TokenVerifier(key, config.workerId(), Clock.systemUTC());
        Optional<SelfSignedIdentity> identity = line.hasOption("tls-self-signed")
                ? Optional.of(SelfSignedIdentity.generate(config.workerId()))
                : Optional.empty();
        Optional<CertificatePin> pin = identity.map(SelfSignedIdentity::pin);
        SslContext ssl = line.hasOption("tls-cert")
                ? new TlsConfig.Server(
                                Path.of(line.getOptionValue("tls-cert")), Path.of(line.getOptionValue("tls-key")))
                        .newSslContext()
                : identity.map(SelfSignedIdentity::serverContext).orElse(null);
        try (GpuBackend backend = Backends.open(backendName)) {
            if (device >= backend.deviceCount()) {
                throw new InputException("--device: " + backendName + " device " + device + " does not exist ("
                        + backend.deviceCount() + " devices)");
            }
            WarmUpSession.WarmUp warmUp = workerTuning.workerWarmUp().appliesTo(backendName)
                    ? WarmUpSession.run(backend, device)
                    : WarmUpSession.WarmUp.NONE;
            WorkerReport report;
            // A holder's worker serves the job's sessions one after another until the tracker ends the holder.
            GpuWorker.Sessions sessions =
                    announcement == null ? GpuWorker.Sessions.ONE : GpuWorker.Sessions.ONE_AFTER_ANOTHER;
            try (GpuWorker worker = GpuWorker.start(
                    config, backend, SessionAuthenticator.checking(verifier), ssl, err::println, sessions)) {
                err.printf(
                        "vgpu worker %s: %s device %d (%s), idle timeout %d s, %s, transport %s, %s%s%n",
                        config.workerId(),
                        backendName,
                        device,
                        backend.deviceProperties(device).describe(),
                        idleSeconds,
                        ssl == null
                                ? "no TLS"
                                : pin.map(p -> "TLS, self-signed " + p).orElse("TLS"),
                        NettyTransport.describe(),
                        sessions == GpuWorker.Sessions.ONE ? "one session" : "sessions one after another",
                        warmUp.describe());
                Endpoint listening =
                        new Endpoint(listen.host(), worker.address().getPort());
                pin.ifPresent(p -> out.println(
                        WorkerLauncher.CERTIFICATE_PREFIX + HexFormat.of().formatHex(p.digest())));
                out.println(WorkerLauncher.LISTENING_PREFIX + listening);
                out.flush();
                if (announcement != null) {
                    // A cancelled holder's worker gets SIGTERM: the hook has the vGPU evacuated before it ends. It is
                    // there before the tracker can lend this worker, so no SIGTERM after that finds it missing (a
                    // worker the tracker never took is refused its worker-leaving, and ends at once).
                    Runtime.getRuntime()
                            .addShutdownHook(new Thread(
                                    new HolderLeaving(
                                            announcement,
                                            worker,
                                            config.workerId(),
                                            key,
                                            HolderLeaving.WAIT,
                                            err::println),
                                    "vgpu-worker-leaving"));
                    announcement.tell(listening, config.workerId(), pin, key);
                    err.println("vgpu worker " + config.workerId() + ": the tracker took it for " + announcement);
                }
                report = worker.awaitReport();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                err.println("vgpu worker " + config.workerId() + ": interrupted");
                return 1;
            }
            out.println(report.servedLine());
            out.flush();
            return report.clean() ? 0 : 1;
        }
    }

    /**
     * The key session tokens are checked with: the site key's file, or the lend's key from the environment (a holder
     * run as the borrowing user must not read the site key, and a variable is readable by that user only).
     */
    private static SiteKey key(CommandLine line) {
        if (line.hasOption("key-file")) {
            return SiteKey.load(Path.of(line.getOptionValue("key-file")));
        }
        String variable = line.getOptionValue("key-env");
        String text = System.getenv(variable);
        if (text == null || text.isBlank()) {
            throw new ConfigException(
                    ConfigException.Code.MISSING, "--key-env: environment variable " + variable + " is not set");
        }
        return SiteKey.fromBase64(text, "environment variable " + variable);
    }
}
