package org.vgpu.runtime.remote.transport;

import java.util.concurrent.Executor;

import io.netty.channel.IoEventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.SingleThreadIoEventLoop;

/**
 * An event loop that polls its sockets again after the tasks that were queued when a pass began,
 * rather than after the queue runs empty.
 *
 * <p>Netty's own loop runs tasks until none are left or its time limit has passed, which it looks at
 * only every 64 tasks: fed 50 µs tasks by another thread, it read a byte from its socket 850 to 2400
 * tasks after the byte arrived ({@code ReadBetweenTasksEventLoopTest} with Netty's loop). A worker's
 * event loop gets one task per DATA chunk from its GPU thread, each a socket write of up to 1 MiB,
 * so while a device-to-host copy streams the queue hardly runs empty: on H200s, requests a client
 * had sent during a mem-sync reached the worker 1.8 to 2.5 ms late, each just after the GPU thread
 * had run out of work and the last write it had queued was done. Here a pass runs at most what was
 * queued before it (tasks added meanwhile wait for the next pass), then the sockets are polled
 * again; when tasks are waiting that poll does not block, so it costs one system call.
 */
final class ReadBetweenTasksEventLoop extends SingleThreadIoEventLoop {

    ReadBetweenTasksEventLoop(IoEventLoopGroup parent, Executor executor, IoHandlerFactory handlers) {
        super(parent, executor, handlers);
    }

    /**
     * Netty's loop, but each pass runs only the tasks already queued (one drain). It mirrors
     * {@code SingleThreadIoEventLoop.run} of Netty 4.2.18 (the same as 4.2.7's) step for step otherwise: check it
     * again when Netty is upgraded.
     */
    @Override
    protected void run() {
        ioHandler().initialize();
        do {
            runIo();
            if (isShuttingDown()) {
                ioHandler().prepareToDestroy();
            }
            runScheduledAndExecutorTasks(1);
        } while (!confirmShutdown() && !canSuspend());
    }
}
