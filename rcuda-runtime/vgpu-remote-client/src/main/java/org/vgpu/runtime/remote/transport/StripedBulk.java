package org.vgpu.runtime.remote.transport;

import java.util.Locale;

/**
 * Whether and over how many extra connections a session stripes its bulk bytes. {@value #MODE_PROPERTY}:
 * {@code other-hosts} (the client's default: to a worker on another host; one on this host takes them through shared
 * memory), {@code off}, or {@code always} (also to a worker on this host when shared memory is not used, for tests
 * and benchmarks, e.g. with {@code -Dvgpu.bulk.shared-memory=off}). {@value #PROPERTY}: the stripe count, 1 to
 * {@value #MAX_STRIPES}, default {@value #DEFAULT_STRIPES}. On the client they decide what the HELLO offers; on the
 * worker, {@code off} refuses stripes and the count is the most a session gets.
 *
 * <p>The default count: on the H200 host native loopback TCP carries 4.4 GB/s with one stream, 15.9 with 4 and 29.2
 * with 8, so 8 stripes are where the remote copies can approach what the host's TCP carries; each costs one event
 * loop thread on the client while the session lasts.
 *
 * <p>Why clients stripe to other hosts by default: on the H200 host (docs/remote-bench.md, 2026-12-02) 8 stripes,
 * each landed by its own event loop on the worker, moved 256 MiB at 10.8-14.9 GB/s to the device and 6.2-8.1 GB/s
 * from it, where one connection moved 3.0 and 3.4 GB/s on the same lease. Measured over loopback: between two hosts
 * the NIC bounds both, and the stripes still spread the per-connection work over cores (TLS's above all).
 */
public final class StripedBulk {
    public static final String PROPERTY = "vgpu.bulk.stripes";
    public static final String MODE_PROPERTY = "vgpu.bulk.striping";
    public static final int DEFAULT_STRIPES = 8;
    /** What a client offers when {@value #MODE_PROPERTY} is not set (the class comment says why). */
    static final String CLIENT_DEFAULT_MODE = "other-hosts";
    /** The most stripes a session takes: the worker's connection bound leaves room for this many beside the session. */
    public static final int MAX_STRIPES = 16;

    private StripedBulk() {}

    /**
     * The stripes a client offers a worker, 0 for none: the count, unless {@value #MODE_PROPERTY} is {@code off}, or
     * {@code other-hosts} and the worker shares this host.
     *
     * @throws IllegalArgumentException a property's value is not one of those it takes
     */
    public static int offeredTo(boolean workerOnThisHost) {
        String mode = System.getProperty(MODE_PROPERTY, CLIENT_DEFAULT_MODE).strip();
        return switch (mode.toLowerCase(Locale.ROOT)) {
            case "off" -> 0;
            case "always" -> stripes();
            case "other-hosts" -> workerOnThisHost ? 0 : stripes();
            default ->
                throw new IllegalArgumentException(
                        "-D" + MODE_PROPERTY + " must be other-hosts, always or off, got '" + mode + "'");
        };
    }

    /** Whether this worker takes stripes: {@value #MODE_PROPERTY} is not {@code off}. */
    public static boolean taken() {
        return !System.getProperty(MODE_PROPERTY, "other-hosts").strip().equalsIgnoreCase("off");
    }

    /**
     * The stripe count {@value #PROPERTY} asks for, 0 when off.
     *
     * @throws IllegalArgumentException the value is neither a count in range nor {@code off}
     */
    public static int stripes() {
        String value =
                System.getProperty(PROPERTY, Integer.toString(DEFAULT_STRIPES)).strip();
        if (value.equalsIgnoreCase("off")) {
            return 0;
        }
        try {
            int stripes = Integer.parseInt(value);
            if (stripes >= 0 && stripes <= MAX_STRIPES) {
                return stripes;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(
                "-D" + PROPERTY + " must be off or a stripe count from 0 to " + MAX_STRIPES + ", got '" + value + "'");
    }
}
