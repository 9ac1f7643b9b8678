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
 * this: a blocked read ends with {@link java.nio.channels.AsynchronousCloseException}.
 */
final class IdleCloser implements AutoCloseable {
    private final Duration timeout;
    private final ScheduledExecutorService timer;

    IdleCloser(Duration timeout) {
        this.timeout = timeout;
        this.timer = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("vgpu-line-idle").daemon().factory());
    }

    /** Starts timing {@code channel}: it is closed unless {@link Watch#busy()} comes within the timeout. */
    Watch watch(Channel channel) {
        Watch watch = new Watch(channel);
        watch.idle();
        return watch;
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }

    /** One channel's timer; waiting for the peer is "idle", the server's own work is "busy". */
    final class Watch implements AutoCloseable {
        private final Channel channel;
        private ScheduledFuture<?> deadline;

        private Watch(Channel channel) {
            this.channel = channel;
        }

        /** The wait for the peer starts again. */
        synchronized void idle() {
            busy();
            if (!timer.isShutdown()) {
                deadline = timer.schedule(this::expire, timeout.toMillis(), TimeUnit.MILLISECONDS);
            }
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
