package org.vgpu.runtime.remote.transport;

import java.util.Locale;

/**
 * Whether and over how many extra connections a session stripes its bulk bytes. {@value #MODE_PROPERTY}:
 * {@code off} (the client's default, below), {@code other-hosts} (to a worker on another host; one on this host takes
 * them through shared memory) or {@code always} (also to a worker on this host when shared memory is not used, for
 * tests and benchmarks, e.g. with {@code -Dvgpu.bulk.shared-memory=off}). {@value #PROPERTY}: the stripe count, 1 to
 * {@value #MAX_STRIPES}, default {@value #DEFAULT_STRIPES}. On the client they decide what the HELLO offers; on the
 * worker, {@code off} refuses stripes and the count is the most a session gets.
 *
 * <p>The default count: on the H200 host native loopback TCP carries 4.4 GB/s with one stream, 15.9 with 4 and 29.2
 * with 8, so 8 stripes are where the remote copies can approach what the host's TCP carries; each costs one event
 * loop thread on the client while the session lasts.
 *
 * <p>Why clients do not stripe unless asked: on the H200 host (docs/remote-bench.md, 2026-11-30) 8 stripes moved 256
 * MiB at 3.5-3.7 GB/s host to device and 4.2-4.3 device to host, one connection 3.4-3.9 and 3.9-4.6, while the worker
 * still read and wrote every stripe on its one event loop. Each stripe now has a loop of its own on the worker too;
 * until the H200 host shows what that gains ({@code testbed/gpu/striped-bulk.sh}) clients stay off (two shared cores
 * cannot show it). A worker takes stripes unless its own property says {@code off}, so that a client may ask for them.
 */
public final class StripedBulk {
    public static final String PROPERTY = "vgpu.bulk.stripes";
    public static final String MODE_PROPERTY = "vgpu.bulk.striping";
    public static final int DEFAULT_STRIPES = 8;
    /** What a client offers when {@value #MODE_PROPERTY} is not set (the class comment says why). */
    static final String CLIENT_DEFAULT_MODE = "off";
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
