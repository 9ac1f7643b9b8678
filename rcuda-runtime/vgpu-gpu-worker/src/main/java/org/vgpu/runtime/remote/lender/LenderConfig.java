package org.vgpu.runtime.remote.lender;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.net.Endpoint;
import org.vgpu.runtime.remote.security.TlsConfig;

/**
 * The settings of one lender node's {@link Lender}, validated once.
 *
 * @param listen the control socket; workers listen on the same host, each on a port of its own
 * @param backend {@code native} or {@code emulated}, for every worker
 * @param devices the devices this node lends, without repeats
 * @param keyFile the site key file: control requests are signed with it, the workers check session tokens with it
 * @param poolSize warm workers kept ready per device (0: every worker starts when it is asked for),
 *        at most {@code maxLentPerDevice}, and fewer while workers are lent
 * @param maxLentPerDevice workers of one device that may be handed out at once; 1 means a GPU is
 *        never lent twice, and a bound stops a flood of {@code open} requests from starting processes without end
 * @param workerIdleTimeout passed to every worker as {@code --idle-timeout}
 * @param tls the workers' certificate and key when their connections use TLS
 */
public record LenderConfig(
        Endpoint listen,
        String backend,
        List<Integer> devices,
        Path keyFile,
        int poolSize,
        int maxLentPerDevice,
        Optional<Duration> workerIdleTimeout,
        Optional<TlsConfig.Server> tls) {
    /** More warm workers than this per device is a typo: each holds a CUDA context on the GPU. */
    public static final int MAX_POOL_SIZE = 16;

    public LenderConfig {
        Objects.requireNonNull(listen, "listen");
        if (!WorkerSpec.BACKENDS.contains(backend)) {
            throw invalid("backend must be one of " + WorkerSpec.BACKENDS + ", got '" + backend + "'");
        }
        devices = List.copyOf(devices);
        if (devices.isEmpty()) {
            throw invalid("a lender needs at least one device");
        }
        if (devices.stream().anyMatch(device -> device < 0) || new HashSet<>(devices).size() != devices.size()) {
            throw invalid("devices must be distinct numbers >= 0, got " + devices);
        }
        Objects.requireNonNull(keyFile, "keyFile");
        if (poolSize < 0 || poolSize > MAX_POOL_SIZE) {
            throw invalid("warm pool size must be in [0, " + MAX_POOL_SIZE + "] per device, got " + poolSize);
        }
        if (maxLentPerDevice < 1) {
            throw invalid("the most lent workers per device must be >= 1, got " + maxLentPerDevice);
        }
        if (poolSize > maxLentPerDevice) {
            throw invalid("a warm pool of " + poolSize + " per device exceeds the " + maxLentPerDevice
                    + " lent worker(s) allowed per device: the extra workers could never be lent");
        }
        Objects.requireNonNull(workerIdleTimeout, "workerIdleTimeout");
        Objects.requireNonNull(tls, "tls");
    }

    /** What a worker for {@code device} is started with; its id is chosen by the pool. */
    WorkerSpec workerSpec(int device, String workerId) {
        return new WorkerSpec(
                new Endpoint(listen.host(), 0), backend, device, workerId, keyFile, tls, workerIdleTimeout);
    }

    private static ConfigException invalid(String problem) {
        return new ConfigException(ConfigException.Code.INVALID, problem);
    }
}
