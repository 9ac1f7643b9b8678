package org.vgpu.common.line;

import java.io.IOException;
import java.nio.channels.Channel;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Closes a channel that waits longer than a timeout for its peer. Channels of UNIX domain sockets
 * have no read timeout of their own, so the server and the client both bound their waits with
 * this: a blocked read ends with {@link java.nio.channels.AsynchronousCloseException}. One daemon
 * thread times every channel of the process, so a client's request costs no thread of its own.
 */
final class IdleCloser {
    private static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("vgpu-line-idle").daemon().factory());

    private IdleCloser() {}

    /** Starts timing {@code channel}: it is closed unless {@link Watch#busy()} comes within {@code timeout}. */
    static Watch watch(Channel channel, Duration timeout) {
        Watch watch = new Watch(channel, timeout);
        watch.idle();
        return watch;
    }

    /** One channel's timer; waiting for the peer is "idle", the server's own work is "busy". */
    static final class Watch implements AutoCloseable {
        private final Channel channel;
        private final Duration timeout;
        private ScheduledFuture<?> deadline;

        private Watch(Channel channel, Duration timeout) {
            this.channel = channel;
            this.timeout = timeout;
        }

        /** The wait for the peer starts again. */
        synchronized void idle() {
            busy();
            deadline = TIMER.schedule(this::expire, timeout.toMillis(), TimeUnit.MILLISECONDS);
        }

        /** The peer answered: no deadline while this side works. */
        synchronized void busy() {
            if (deadline != null) {
                deadline.cancel(false);
                deadline = null;
            }
        }

        private void expire() {
            try {
                channel.close();
            } catch (IOException ignored) {
                // A channel that fails to close is already unusable; the read it blocked ends either way.
            }
        }

        @Override
        public void close() {
            busy();
        }
    }
}
