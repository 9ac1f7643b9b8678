package org.vgpu.runtime.remote.lender;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.common.error.InputException;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SessionToken;
import org.vgpu.runtime.remote.security.TlsConfig;

/**
 * How to start one GPU worker: the options of the worker's command line, validated once.
 *
 * @param listen where the worker listens; port 0 lets it pick a free port, which it reports
 * @param backend {@code native} or {@code emulated}
 * @param device the device of the backend the worker serves
 * @param workerId the id session tokens must name (see {@link SessionToken#requireId})
 * @param keyFile the site key file the worker checks tokens with
 * @param tls how the worker's connections use TLS (its certificate and key, or one it makes); empty: plain TCP
 * @param idleTimeout how long the worker waits for its client before giving up (whole seconds)
 */
public record WorkerSpec(
        Endpoint listen,
        String backend,
        int device,
        String workerId,
        Path keyFile,
        Optional<? extends TlsConfig.WorkerTls> tls,
        Optional<Duration> idleTimeout) {
    public static final List<String> BACKENDS = List.of("native", "emulated");

    public WorkerSpec {
        Objects.requireNonNull(listen, "listen");
        if (!BACKENDS.contains(backend)) {
            throw new InputException("a worker's backend must be one of " + BACKENDS + ", got '" + backend + "'");
        }
        if (device < 0) {
            throw new InputException("device must be >= 0, got " + device);
        }
        SessionToken.requireId("worker id", workerId);
        Objects.requireNonNull(keyFile, "keyFile");
        Objects.requireNonNull(tls, "tls");
        Objects.requireNonNull(idleTimeout, "idleTimeout");
        idleTimeout.ifPresent(timeout -> {
            if (timeout.toSeconds() < 1 || timeout.toNanosPart() != 0) {
                throw new InputException("a worker's idle timeout is whole seconds >= 1, got " + timeout);
            }
        });
    }

    /** A worker without TLS or idle timeout. */
    public WorkerSpec(Endpoint listen, String backend, int device, String workerId, Path keyFile) {
        this(listen, backend, device, workerId, keyFile, Optional.empty(), Optional.empty());
    }

    /**
     * The worker's command-line options, exactly as the worker command accepts them:
     * {@code --listen HOST:PORT --backend B --device D --worker-id ID --key-file FILE
     * [--tls-cert PEM --tls-key PEM | --tls-self-signed] [--idle-timeout SECONDS]}.
     */
    public List<String> arguments() {
        List<String> arguments = new ArrayList<>(List.of(
                "--listen",
                listen.toString(),
                "--backend",
                backend,
                "--device",
                Integer.toString(device),
                "--worker-id",
                workerId,
                "--key-file",
                keyFile.toString()));
        tls.ifPresent(how -> arguments.addAll(how.workerArguments()));
        idleTimeout.ifPresent(
                timeout -> arguments.addAll(List.of("--idle-timeout", Long.toString(timeout.toSeconds()))));
        return List.copyOf(arguments);
    }
}
