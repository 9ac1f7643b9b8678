package org.vgpu.runtime.remote;

import java.util.Locale;
import java.util.Objects;
import java.util.Properties;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.InputException;
import org.vgpu.runtime.remote.protocol.RequestDecoder;

/**
 * The remote runtime's tuning knobs, read from system properties once per process: the one place
 * that reads and validates them. They exist mostly to measure (set them on both ends, through
 * JAVA_TOOL_OPTIONS, which the workers a launcher starts inherit); a value that cannot be used
 * fails at start-up with a message naming the property and what it accepts, instead of being
 * clamped or ignored.
 *
 * @param chunkBytes        {@value #CHUNK_KIB}: the chunk size of copies unless a client configures
 *                          another, and what one staging slot of a worker holds, so that a
 *                          device-to-host chunk is one slot (default 1 MiB)
 * @param spinNanos         {@value #SPIN_MICROS}: how long threads of a session poll for their next
 *                          piece of work before they sleep: the app thread waiting for a reply, both
 *                          event loops, the worker's GPU thread. Polling pays only where cores are
 *                          plentiful (a busy session keeps up to four threads running); on a small
 *                          machine they would take the CPU from each other, so the default is 50 us
 *                          from 8 cores on and 0 (no polling) below
 * @param socketBufferBytes {@value #SOCKET_BUFFER_KIB}: SO_RCVBUF and SO_SNDBUF of session
 *                          connections, on whichever end it is set; 0 (the default) leaves them to
 *                          the kernel's autotuning, which usually grows them further than a fixed size
 * @param copierMinBytes    {@value #COPIER_MIN_KIB}, client end: device-to-host chunks of at least
 *                          this size land through the connection's copier thread; 0 lands every
 *                          chunk on the event loop (default 256 KiB: a handoff costs a few
 *                          microseconds, about what copying 256 KiB does)
 * @param workerWarmUp      {@value #WORKER_WARM_UP}: whether a worker serves itself a warm-up session
 *                          before it listens
 * @param copyThreads       {@value #COPY_THREADS}: how many threads copy a large chunk between the network's
 *                          buffers and host memory (the worker's staging slot, the caller's memory), the one copy
 *                          in user space a bulk byte takes ({@code ParallelCopy}); default 4 from 8 cores on, else 1
 * @param landStripedChunks {@value #LANDING}: whether a stripe lands chunks as they arrive, on its own event loop
 *                          (true, the default), or keeps them in the socket's buffers to be copied after their frames
 *                          (false, to compare): on the worker each chunk bound for the device, in page-locked memory;
 *                          on the client the chunks of a device-to-host copy whose memory stays allocated and that
 *                          overtakes no other copy into it, read straight into the caller's memory
 */
public record RemoteTuning(
        int chunkBytes,
        long spinNanos,
        int socketBufferBytes,
        int copierMinBytes,
        WorkerWarmUp workerWarmUp,
        int copyThreads,
        boolean landStripedChunks) {
    public static final String CHUNK_KIB = "vgpu.chunk.kib";
    public static final String SPIN_MICROS = "vgpu.spin.micros";
    public static final String SOCKET_BUFFER_KIB = "vgpu.socket.buffer.kib";
    public static final String COPIER_MIN_KIB = "vgpu.client.copier.min.kib";
    public static final String WORKER_WARM_UP = "vgpu.worker.warm-up";
    public static final String COPY_THREADS = "vgpu.bulk.copy.threads";
    public static final String LANDING = "vgpu.bulk.landing";

    /** The largest chunk in KiB: a chunk and its offset must fit one frame's body. */
    static final int MAX_CHUNK_KIB = RequestDecoder.MAX_CHUNK_BYTES >> 10;
    /** A fixed socket buffer of more than 1 GiB is a typo, not a measurement. */
    static final int MAX_SOCKET_BUFFER_KIB = 1 << 20;
    /** Polling for more than a second before sleeping is a typo too. */
    static final long MAX_SPIN_MICROS = 1_000_000;
    /** More copying threads than a large machine's cores is a typo as well. */
    static final int MAX_COPY_THREADS = 64;

    private static final Logger LOG = LoggerFactory.getLogger(RemoteTuning.class);
    /**
     * Read on first use rather than in a static initializer, so that a bad value is an error the
     * command reports, not an ExceptionInInitializerError.
     */
    private static volatile RemoteTuning current;

    /** Whether a worker warms up before it listens. */
    public enum WorkerWarmUp {
        /**
         * Native workers only (unset): the CPU emulation serves tests and laptops, where how fast
         * a fresh worker is does not matter.
         */
        NATIVE_ONLY,
        /** Every worker ({@code true}). */
        ON,
        /** No worker ({@code false}), to measure what the warm-up is worth. */
        OFF;

        /** Whether a worker of backend {@code backendName} ("native", "emulated") warms up. */
        public boolean appliesTo(String backendName) {
            return this == ON || (this == NATIVE_ONLY && "native".equals(backendName));
        }
    }

    public RemoteTuning {
        Objects.requireNonNull(workerWarmUp, "workerWarmUp");
    }

    /**
     * This process's tuning: read and validated from the system properties on first use, and
     * logged once at INFO; later calls return the same record.
     *
     * @throws InputException where a property holds a value it does not accept (asked again, it reads again)
     */
    public static RemoteTuning current() {
        RemoteTuning tuning = current;
        if (tuning == null) {
            synchronized (RemoteTuning.class) {
                tuning = current;
                if (tuning == null) {
                    tuning = fromProperties(System.getProperties());
                    LOG.info("vgpu tuning: {}", tuning.describe());
                    current = tuning;
                }
            }
        }
        return tuning;
    }

    /**
     * The tuning {@code properties} ask for, defaults where a property is unset.
     *
     * @throws InputException naming the property and the values it accepts, where one holds another value
     */
    public static RemoteTuning fromProperties(Properties properties) {
        int chunkKib = (int) number(properties, CHUNK_KIB, 1024, 4, MAX_CHUNK_KIB, "KiB");
        long spinMicros = number(
                properties,
                SPIN_MICROS,
                Runtime.getRuntime().availableProcessors() >= 8 ? 50 : 0,
                0,
                MAX_SPIN_MICROS,
                "us; 0: no polling");
        int socketBufferKib = (int)
                number(properties, SOCKET_BUFFER_KIB, 0, 0, MAX_SOCKET_BUFFER_KIB, "KiB; 0: the kernel's autotuning");
        int copierMinKib = (int)
                number(properties, COPIER_MIN_KIB, 256, 0, MAX_CHUNK_KIB, "KiB; 0: every chunk on the event loop");
        int copyThreads = (int) number(
                properties,
                COPY_THREADS,
                Runtime.getRuntime().availableProcessors() >= 8 ? 4 : 1,
                1,
                MAX_COPY_THREADS,
                "threads; 1: the calling thread alone");
        return new RemoteTuning(
                chunkKib << 10,
                spinMicros * 1000,
                socketBufferKib << 10,
                copierMinKib << 10,
                warmUp(properties),
                copyThreads,
                landing(properties));
    }

    /** One line of the values and the properties that set them, e.g. "chunk 1024 KiB (-Dvgpu.chunk.kib), ...". */
    public String describe() {
        return "chunk " + (chunkBytes >> 10) + " KiB (-D" + CHUNK_KIB + "), "
                + "poll " + spinNanos / 1000 + " us before sleeping (-D" + SPIN_MICROS + "), "
                + "socket buffers "
                + (socketBufferBytes > 0 ? (socketBufferBytes >> 10) + " KiB" : "autotuned by the kernel") + " (-D"
                + SOCKET_BUFFER_KIB + "), "
                + "client lands chunks "
                + (copierMinBytes > 0
                        ? "of " + (copierMinBytes >> 10) + " KiB and more through a copier thread"
                        : "on the event loop")
                + " (-D" + COPIER_MIN_KIB + "), "
                + "worker warm-up "
                + switch (workerWarmUp) {
                    case NATIVE_ONLY -> "on native workers";
                    case ON -> "on every worker";
                    case OFF -> "off";
                }
                + " (-D" + WORKER_WARM_UP + "), "
                + "large chunks copied by " + copyThreads + (copyThreads == 1 ? " thread" : " threads") + " (-D"
                + COPY_THREADS + "), "
                + (landStripedChunks
                        ? "striped chunks landed by their stripes"
                        : "striped chunks copied after their frames")
                + " (-D" + LANDING + ")";
    }

    private static long number(Properties properties, String name, long defaultValue, long min, long max, String unit) {
        String text = properties.getProperty(name);
        if (text == null) {
            return defaultValue;
        }
        long value;
        try {
            value = Long.parseLong(text.strip());
        } catch (NumberFormatException e) {
            value = Long.MIN_VALUE;
        }
        if (value < min || value > max) {
            throw new InputException("-D" + name + "=" + text + ": expected a whole number from " + min + " to " + max
                    + " (" + unit + "), default " + defaultValue);
        }
        return value;
    }

    private static boolean landing(Properties properties) {
        String text = properties.getProperty(LANDING);
        if (text == null) {
            return true;
        }
        return switch (text.strip().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new InputException("-D" + LANDING + "=" + text + ": expected true or false, default true");
        };
    }

    private static WorkerWarmUp warmUp(Properties properties) {
        String text = properties.getProperty(WORKER_WARM_UP);
        if (text == null) {
            return WorkerWarmUp.NATIVE_ONLY;
        }
        return switch (text.strip().toLowerCase(Locale.ROOT)) {
            case "true" -> WorkerWarmUp.ON;
            case "false" -> WorkerWarmUp.OFF;
            default ->
                throw new InputException("-D" + WORKER_WARM_UP + "=" + text
                        + ": expected true or false; unset, native workers warm up and emulated ones do not");
        };
    }
}
