/**
 * The remote backend: {@link org.vgpu.runtime.remote.client.RemoteGpu}, a
 * {@link org.vgpu.runtime.api.VirtualGpu} whose device is a GPU worker on another node, and
 * {@link org.vgpu.runtime.remote.client.RemoteBackend}, which opens them on workers a
 * {@link org.vgpu.runtime.remote.client.WorkerSource} supplies.
 *
 * <p>App threads validate a call locally (the shared checks of
 * {@link org.vgpu.runtime.core.AbstractVirtualGpu}), encode it straight into the connection's
 * batch and, for a synchronizing call, wait for the reply, polling briefly before they sleep.
 * Asynchronous calls are batched until a synchronizing call, a size bound or an asynchronous
 * device-to-host copy of a chunk or more. Large copies travel
 * in pipelined chunks; host-to-device chunks are sent from the caller's native memory without a
 * copy, device-to-host chunks are copied into the caller's memory as they arrive (large ones by the
 * connection's copier thread, {@link org.vgpu.runtime.remote.client.ChunkLanding}, so the event
 * loop keeps reading the socket; no call returns before the chunks ahead of its reply have landed). A worker that
 * closes the connection or stops answering keepalives fails its vGPU's calls with
 * VGPU_WORKER_LOST, naming it; each vGPU has its own worker and connection.
 */
package org.vgpu.runtime.remote.client;
