/**
 * The wire protocol between a remote vGPU's client ({@code RemoteGpu}) and its GPU worker, apart
 * from any transport: frames, opcodes, and the encoders and decoders that write and read them.
 *
 * <p>Every frame is a length-prefixed binary record (layout: {@link org.vgpu.runtime.remote.protocol.Frames})
 * with an {@link org.vgpu.runtime.remote.protocol.Opcode} that names one VirtualGpu call or one of the
 * session's own frames, and a request id that replies echo. A session starts with HELLO (protocol
 * version, session token, the vGPU's window) answered by WELCOME (the device), or by ERROR and a
 * close. Asynchronous calls (launches, asynchronous copies and memsets, stream and event creation,
 * event records, stream waits) carry {@code FLAG_ASYNC} and get no reply on success; the worker keeps the first
 * failure and reports it at the next synchronizing request, as CUDA reports an asynchronous error at
 * the next synchronizing call. Copies larger than a chunk travel as several frames of one request
 * ({@code FLAG_MORE}) so the network and the device's copy engine overlap. Errors carry the CUDA
 * error name, so a failure on the worker reads the same as on a local GPU.
 *
 * <p>{@link org.vgpu.runtime.remote.protocol.RequestEncoder} / {@link org.vgpu.runtime.remote.protocol.ReplyEncoder}
 * write frames straight into a buffer; {@link org.vgpu.runtime.remote.protocol.FrameDecoder} splits
 * the byte stream into {@link org.vgpu.runtime.remote.protocol.Frame}s and refuses oversized or
 * garbage ones before buffering them; {@link org.vgpu.runtime.remote.protocol.RequestDispatch} /
 * {@link org.vgpu.runtime.remote.protocol.ReplyDecoder} read bodies into visitor calls.
 *
 * <p>The requests are described once, in {@link org.vgpu.runtime.remote.protocol.RemoteCalls} and,
 * for the calls a worker serves one to one, on {@code VirtualGpu} itself ({@code @RemoteCall}): the
 * build generates {@code Opcode}, {@code RequestEncoder}, {@code RequestDispatch} and
 * {@code RequestVisitor} from them (vgpu-call-surface-processor), each field going through its codec in
 * {@link org.vgpu.runtime.remote.protocol.WireCodecs}, and both ends of the one-to-one calls: their
 * results' {@code ResultEncoder} (the superclass of the hand-written {@code ReplyEncoder}) and
 * {@code ResultDecoder}, the client's {@code OneToOneClientCalls} and the worker's
 * {@code OneToOneWorkerCalls}. The other replies are few and hand-written.
 */
package org.vgpu.runtime.remote.protocol;
