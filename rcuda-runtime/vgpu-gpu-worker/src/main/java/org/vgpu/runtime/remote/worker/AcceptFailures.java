package org.vgpu.runtime.remote.worker;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

import org.vgpu.common.error.IoReasons;
import org.vgpu.common.error.VgpuFailure;

/**
 * Failed accepts on a worker's listening socket, told in one line at most every
 * {@link #REPORT_EVERY} instead of a Netty stack trace per failure: a worker out of file
 * descriptors fails every accept, and a log that grows by a stack each time helps nobody. Accepting
 * pauses for {@link #PAUSE} after a failure, as Netty's own acceptor would (this handler takes the
 * failure before it does), so that a worker out of descriptors does not spin. Event loop only.
 */
final class AcceptFailures extends ChannelInboundHandlerAdapter {
    static final Duration PAUSE = Duration.ofSeconds(1);
    static final Duration REPORT_EVERY = Duration.ofMinutes(1);

    private final String workerId;
    private final Consumer<String> log;
    private final LongSupplier nanoClock;
    private boolean reported;
    private long lastReport;
    private int unreported;

    AcceptFailures(String workerId, Consumer<String> log, LongSupplier nanoClock) {
        this.workerId = workerId;
        this.log = log;
        this.nanoClock = nanoClock;
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ChannelConfig config = ctx.channel().config();
        if (config.isAutoRead()) {
            config.setAutoRead(false);
            ctx.executor().schedule(() -> config.setAutoRead(true), PAUSE.toNanos(), TimeUnit.NANOSECONDS);
        }
        unreported++;
        long now = nanoClock.getAsLong();
        if (!reported || now - lastReport >= REPORT_EVERY.toNanos()) {
            log.accept("worker " + workerId + " cannot accept connections: "
                    + (cause instanceof IOException io ? IoReasons.of(io) : VgpuFailure.describe(cause))
                    + (unreported > 1 ? " (" + unreported + " failed accepts since the last report)" : "")
                    + "; it tries again every " + PAUSE.toSeconds() + " s and reports this at most every "
                    + REPORT_EVERY.toMinutes() + " min");
            reported = true;
            lastReport = now;
            unreported = 0;
        }
    }
}
