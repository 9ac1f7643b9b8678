package org.vgpu.runtime.remote.lender;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.InputException;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SessionToken;
import org.vgpu.common.security.SiteKey;

/**
 * The supervisor of one lender node ({@code vgpu lender}): keeps a warm pool of GPU workers per
 * device, hands them out on request, reaps those that exit (logging what each served) and refills
 * the pool. It is asked through a line protocol on a TCP control socket, described in
 * {@link ControlProtocol}: {@code open DEVICE} answers {@code ok HOST:PORT WORKER-ID}, {@code status}
 * lists the workers.
 *
 * <p>A worker's id is fixed when it starts (the worker checks that session tokens name it), so
 * the lender names its workers {@code NODE-dDEVICE-RANDOM} and reports the id with the endpoint.
 * Ids are random rather than counted so a restarted lender never reuses one: an old token stays
 * useless. Every control request must be signed with the site key, so a stranger who reaches the
 * socket can neither list workers, take lend slots nor end a lend; using a worker takes a session
 * token signed with the same key.
 *
 * <p>The tracker does not use the lender: each holder job runs its own worker. The lender serves a
 * node's GPUs to clients outside the tracker (by hand, tests, benchmarks) for an admin holding the key.
 */
public final class Lender implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Lender.class);
    private static final int MAX_NODE_NAME_CHARS = 64;

    private final LenderConfig config;
    private final Map<Integer, DevicePool> pools = new LinkedHashMap<>();
    private final ExecutorService launches = Executors.newVirtualThreadPerTaskExecutor();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("lender-retry-timer").daemon().factory());
    private final AtomicBoolean closing = new AtomicBoolean();
    private final CountDownLatch closed = new CountDownLatch(1);
    private final String nodeName = nodeName();
    private final SecureRandom random = new SecureRandom();
    /** Control requests are short ({@code open 3}); the cap bounds what a stranger can make the lender buffer. */
    static final LineServer.Limits CONTROL_LIMITS =
            new LineServer.Limits("lender control", 256, 32, Duration.ofMinutes(5));

    private volatile LineServer controlServer;

    private Lender(LenderConfig config, WorkerLauncher launcher) {
        this.config = config;
        for (int device : config.devices()) {
            pools.put(device, new DevicePool(device, config, launcher, () -> newWorkerId(device), launches, timer));
        }
    }

    /**
     * Checks the key file (and TLS files), binds the control socket and starts filling the pools.
     *
     * @throws org.vgpu.common.error.VgpuFailure when the key or TLS files are unusable
     *         ({@link ConfigException}) or the socket cannot be bound (NetworkException); nothing is
     *         left running then
     */
    public static Lender start(LenderConfig config, WorkerLauncher launcher) {
        SiteKey key = SiteKey.load(config.keyFile());
        config.tls().ifPresent(tls -> tls.newSslContext());
        Lender lender = new Lender(config, launcher);
        try {
            lender.controlServer = LineServer.start(
                    config.listen(),
                    CONTROL_LIMITS,
                    new ControlProtocol(lender, CONTROL_LIMITS.maxRequestBytes(), key));
        } catch (RuntimeException e) {
            lender.close();
            throw e;
        }
        LOG.info("lender control socket {}", lender.controlServer.endpoint());
        LOG.info("lender backend {}, devices {}", config.backend(), config.devices());
        LOG.info(
                "lender warm pool {} worker(s) per device, at most {} lent per device",
                config.poolSize(),
                config.maxLentPerDevice());
        LOG.info(
                "lender worker idle timeout {}",
                config.workerIdleTimeout().map(t -> t.toSeconds() + " s").orElse("the worker's own default"));
        LOG.info("lender worker TLS {}", config.tls().map(Object::toString).orElse("off"));
        LOG.info("lender site key {} ({})", config.keyFile(), key);
        LOG.info("lender {}", launcher);
        lender.pools.values().forEach(DevicePool::refill);
        return lender;
    }

    /** The control socket's address (with the actual port when port 0 was configured). */
    public Endpoint controlEndpoint() {
        return controlServer.endpoint();
    }

    public LenderConfig config() {
        return config;
    }

    /**
     * Hands out a worker of {@code device}: a warm one, or a new one when none is warm.
     *
     * @throws InputException when this node does not lend {@code device}
     * @throws LendingException DEVICE_BUSY when the device has its most lent workers,
     *         WORKER_NOT_STARTED when a new worker fails to start, CLOSING while the lender closes
     */
    public LentWorker open(int device) {
        DevicePool pool = pools.get(device);
        if (pool == null) {
            throw new InputException(
                    "device " + device + " is not lent by this node (it lends " + config.devices() + ")");
        }
        return pool.open();
    }

    /**
     * Stops the lent worker {@code workerId}, whose session (or the wait for it) is over.
     *
     * @throws InputException when no device has a lent worker of that id
     */
    public void closeLent(String workerId) {
        for (DevicePool pool : pools.values()) {
            if (pool.closeLent(workerId)) {
                return;
            }
        }
        throw new InputException("no lent worker '" + workerId + "' (it may have ended already)");
    }

    /** Every worker of every device, by device and start. */
    public List<WorkerStatus> status() {
        List<WorkerStatus> workers = new ArrayList<>();
        for (DevicePool pool : pools.values()) {
            workers.addAll(pool.status());
        }
        return workers;
    }

    /** Blocks until {@link #close()} has finished. */
    public void awaitClosed() throws InterruptedException {
        closed.await();
    }

    /** Stops answering, stops every worker (lent ones too: their sessions end) and waits for them. */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            awaitClosedUninterruptibly();
            return;
        }
        if (controlServer != null) {
            controlServer.close();
        }
        List<LaunchedWorker> running = new ArrayList<>();
        for (DevicePool pool : pools.values()) {
            running.addAll(pool.shutDown());
        }
        launches.shutdownNow();
        try (ExecutorService stopping = Executors.newVirtualThreadPerTaskExecutor()) {
            running.forEach(worker -> stopping.execute(worker::close));
        }
        try {
            if (!launches.awaitTermination(30, TimeUnit.SECONDS)) {
                LOG.warn("lender: worker launches still running 30 s after close");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        timer.shutdownNow();
        LOG.info("lender stopped");
        closed.countDown();
    }

    /** A second close returns once the first has finished, so no caller sees workers still running. */
    private void awaitClosedUninterruptibly() {
        boolean interrupted = false;
        while (true) {
            try {
                closed.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private String newWorkerId(int device) {
        return nodeName + "-d" + device + "-" + HexFormat.of().toHexDigits(random.nextInt());
    }

    /** This host's name as a worker-id prefix: letters, digits, '.', '-' and '_' only. */
    private static String nodeName() {
        String name;
        try {
            name = InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            name = "lender";
        }
        String cleaned = name.replaceAll("[^A-Za-z0-9._-]", "-");
        int maxChars = Math.min(MAX_NODE_NAME_CHARS, SessionToken.MAX_ID_LENGTH - 20);
        return cleaned.isEmpty() ? "lender" : cleaned.substring(0, Math.min(cleaned.length(), maxChars));
    }
}
