/**
 * The GPU worker: the process ({@code vgpu worker}, {@link org.vgpu.runtime.remote.worker.WorkerCommand})
 * that serves one borrowed vGPU on a lender node (DESIGN.md, "One worker process per remote vGPU").
 *
 * <p>Threads: one Netty event loop owns the connection (reads, writes, the handshake, keepalive
 * pongs); one GPU thread ({@link org.vgpu.runtime.remote.worker.SessionExecutor}) executes the
 * session's requests in order ({@link org.vgpu.runtime.remote.worker.RequestHandler}) on a local
 * {@link org.vgpu.runtime.api.VirtualGpu} (native or emulated), which re-validates every pointer
 * and handle, so a client can reach nothing but its own allocations. Frames go from the event loop to the GPU thread through a queue (reading pauses
 * when it holds too much); replies go back through the channel. A frame belongs to whoever holds
 * it last, who releases it. Bulk copies pass through a few page-locked slots
 * ({@link org.vgpu.runtime.remote.worker.StagingRing}), so the device's copies run asynchronously
 * while the network moves the neighbouring chunks, and device-to-host data goes to the socket
 * straight from its slot.
 *
 * <p>The worker serves ONE session, then frees the vGPU and exits, also when the client vanishes,
 * stays silent past the idle timeout, or breaks the protocol; it reports what it served. The same
 * {@link org.vgpu.runtime.remote.worker.GpuWorker} also serves a launcher's local worker on a Unix
 * domain socket: a session per vGPU of the program it runs, several at once, for the socket owner's
 * processes only ({@link org.vgpu.runtime.remote.worker.SameUserSessions}).
 */
package org.vgpu.runtime.remote.worker;
