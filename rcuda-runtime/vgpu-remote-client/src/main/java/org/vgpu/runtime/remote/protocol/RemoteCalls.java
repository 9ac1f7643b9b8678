package org.vgpu.runtime.remote.protocol;

import static org.vgpu.runtime.api.surface.Call.Kind.ASYNC;
import static org.vgpu.runtime.api.surface.Call.Kind.ASYNC_OR_SYNCHRONIZING;
import static org.vgpu.runtime.api.surface.Call.Kind.CHUNKED;
import static org.vgpu.runtime.api.surface.Call.Kind.SYNC;
import static org.vgpu.runtime.api.surface.Call.Kind.SYNCHRONIZING;

import java.util.List;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.api.surface.Call;
import org.vgpu.runtime.api.surface.CallSurface;
import org.vgpu.runtime.api.surface.Codec;
import org.vgpu.runtime.api.surface.Reply;
import org.vgpu.runtime.core.AbstractVirtualGpu;

// The one description of the remote protocol's frames: the build generates Opcode (with the doc
// comments below), RequestEncoder, RequestDispatch and RequestVisitor from it and from VirtualGpu's
// @RemoteCall methods, each field going through its codec in WireCodecs. Nobody implements this
// interface. The calls a worker serves one to one are described on VirtualGpu itself, and both
// their ends are generated (the client's primitives in OneToOneClientCalls, the worker's requests
// in OneToOneWorkerCalls, their results in ResultEncoder and ResultDecoder); those listed here have a
// remote form of their own, written by hand in RemoteGpu and RequestHandler: the session's frames,
// calls whose ids the client chooses and whose remote form carries more (module loading, function
// lookup with the kernel's parameter sizes) or that the
// client answers itself when it can (a stream ending in a copy to the host),
// allocations (placed by the client's window allocator), copies and memsets (chunked, gathered,
// scattered, one request for the synchronous and asynchronous forms), launches (arguments packed)
// and memGetInfo (which AbstractVirtualGpu leaves to each backend). Opcodes never change once
// released, since they are what older peers send.

/**
 * What a frame asks for or answers: one opcode per request of {@link RemoteCalls}, which are the
 * {@link org.vgpu.runtime.api.VirtualGpu} calls as a worker serves them, plus the session's own
 * frames (handshake, keepalive, goodbye) and the three replies.
 *
 * <p>Body layouts follow each constant; every integer is big-endian, {@code string} is an int32
 * byte count and that many UTF-8 bytes, {@code rest} runs to the end of the frame. Requests marked
 * <em>may be async</em> accept {@link Frames#FLAG_ASYNC}: then the worker sends no reply on
 * success and keeps the first failure for the next synchronizing request. Requests marked
 * <em>synchronizing</em> (when sent without {@link Frames#FLAG_ASYNC}) report such a kept failure
 * instead of executing, as the next synchronizing CUDA call reports an earlier asynchronous error.
 * Every other request is answered by {@link #OK}, {@link #ERROR} or, for {@link #memcpyDtoH MEMCPY_DTOH} and
 * {@link #memcpyDtoHGather MEMCPY_DTOH_GATHER}, {@link #DATA} frames.
 */
@CallSurface(
        codecs = WireCodecs.class,
        api = VirtualGpu.class,
        validation = AbstractVirtualGpu.class,
        client = "org.vgpu.runtime.remote.client.OneToOneClientCalls",
        worker = "org.vgpu.runtime.remote.worker.OneToOneWorkerCalls")
interface RemoteCalls {
    // ---- session

    /** Client's first frame. {@code int32 magic 'VGPU', uint16 version, int32 vgpu index, int64 window base,
     *  int64 window size, string session token}. Answered by {@link #WELCOME} or {@link #ERROR} and a close. */
    @Call(opcode = 0x0001, kind = SYNC)
    void hello(Hello hello);

    /** {@code uint16 version, string worker id, int32 idle timeout ms, string device name, int64 total memory,
     *  int32 cc major, int32 cc minor, int32 multiprocessors, int32 max threads per block, int32 warp size,
     *  uint8 emulated}; from version 2 (in the HELLO's version): {@code string shared region path (empty: none),
     *  int64 nonce, string why there is none} ({@link SharedRegionOffer}). */
    @Reply
    int WELCOME = 0x0002;

    /** Keepalive, empty; answered by {@link #PONG} from the worker's event loop even while a call runs. */
    @Call(opcode = 0x0003, kind = SYNC)
    void ping();

    /** Empty. */
    @Reply
    int PONG = 0x0004;

    /** Orderly end of the session, empty: the worker frees the vGPU, answers {@link #OK} and closes. */
    @Call(opcode = 0x0005, kind = SYNC)
    void goodbye();

    // ---- replies

    /** Success; {@code rest}: the result, whose layout the request's opcode fixes (see {@link ReplyDecoder}). */
    @Reply
    int OK = 0x0010;

    /** Failure: {@code int32 error number, string error name (the CUDA name, e.g. CUDA_ERROR_INVALID_VALUE),
     *  string detail}. Request id 0 reports a failure of the session itself before the connection closes. */
    @Reply
    int ERROR = 0x0011;

    /** One chunk of a device-to-host copy: {@code int64 offset into the copy, rest: bytes} (with
     *  {@link Frames#FLAG_IN_SLOT}: {@code uint32 slot, uint32 length} of the shared slot holding them).
     *  {@link Frames#FLAG_MORE} on every chunk but the last; the last ends the request. */
    @Reply(chunked = true)
    int DATA = 0x0012;

    // ---- device

    /** Empty; OK: {@code int64 free, int64 total}. */
    @Call(opcode = 0x0020, kind = SYNC)
    void memGetInfo();

    // ---- modules

    /** {@code int32 module id (chosen by the client), rest: image}. */
    @Call(opcode = 0x0030, kind = SYNC)
    void moduleLoad(int moduleId, @Codec("ModuleImage") ByteBuf image);

    /** {@code int32 module id, int32 function id (chosen by the client), string kernel name};
     *  OK: {@code uint16 n, n x int32 parameter size}. */
    @Call(opcode = 0x0032, kind = SYNC)
    void moduleGetFunction(int moduleId, int functionId, String kernelName);

    // ---- memory

    /** {@code int64 address (chosen by the client's window allocator), int64 bytes}. */
    @Call(opcode = 0x0040, kind = SYNC)
    void memAllocAt(long address, long bytes);

    /** {@code int64 address}. */
    @Call(opcode = 0x0041, kind = SYNC)
    void memFree(long address);

    /** Many allocations at once, all or none (a client maps the chunks a migration's replay needs so):
     *  {@code int32 n, n x (int64 address, int64 bytes)}, each as {@link #memAllocAt}. */
    @Call(opcode = 0x0042, kind = SYNC)
    void memAllocAllAt(@Codec("GatherRegions") List<DeviceRegion> allocations);

    /** One chunk of a host-to-device copy: {@code int32 stream id, int64 destination of this chunk, rest: bytes}.
     *  {@link Frames#FLAG_MORE} on every chunk but the last, all with the same request id and no other
     *  request in between; the request is answered (or its failure kept) after the last chunk. */
    @Call(opcode = 0x0050, kind = CHUNKED, name = "MEMCPY_HTOD")
    void memcpyHtoD(int streamId, long dst, @Codec("Rest") ByteBuf data);

    /** {@code int32 stream id, int64 source, int64 bytes, int32 chunk bytes}; answered by {@link #DATA} chunks
     *  of at most chunk bytes, also when asynchronous, or by {@link #ERROR}. */
    @Call(opcode = 0x0051, kind = ASYNC_OR_SYNCHRONIZING, name = "MEMCPY_DTOH")
    void memcpyDtoH(int streamId, long src, long bytes, @Codec("ChunkSize") int chunkBytes);

    /** {@code int32 stream id, int64 destination, int64 source, int64 bytes}. */
    @Call(opcode = 0x0052, kind = ASYNC_OR_SYNCHRONIZING, name = "MEMCPY_DTOD")
    void memcpyDtoD(int streamId, long dst, long src, long bytes);

    /** {@code int32 stream id, int64 destination, int32 value, uint8 element size (1, 2 or 4), int64 count}. */
    @Call(opcode = 0x0053, kind = ASYNC_OR_SYNCHRONIZING)
    void memset(int streamId, long dst, int value, @Codec("ElementSize") int elementSize, long count);

    /**
     * Many device regions read into one reply (a migration's mem-sync reads its live regions so):
     * {@code int32 stream id, int32 chunk bytes, int32 n, n x (int64 source, int64 bytes)}, nothing
     * after. Answered as {@link #memcpyDtoH MEMCPY_DTOH} is, by {@link #DATA} chunks of at most chunk bytes whose
     * offsets count through the regions' bytes laid back to back in their order, also when
     * asynchronous, or by {@link #ERROR}. The body must hold exactly n regions, n >= 0 and every
     * byte count >= 0; their sum is the length of the reply.
     */
    @Call(opcode = 0x0054, kind = ASYNC_OR_SYNCHRONIZING, name = "MEMCPY_DTOH_GATHER")
    void memcpyDtoHGather(
            int streamId, @Codec("ChunkSize") int chunkBytes, @Codec("GatherRegions") List<DeviceRegion> regions);

    /**
     * Packed host bytes written into many device regions (a migration's mem-sync writes a remote
     * target so), in chunks as {@link #memcpyHtoD MEMCPY_HTOD}: {@code int32 stream id, int32 n, n x (int64
     * destination, int64 bytes), rest: the pieces' bytes back to back}. Each chunk names the pieces
     * its bytes go to, at most {@link RequestDecoder#MAX_SCATTER_PIECES}, and must carry exactly their
     * sum; {@link Frames#FLAG_MORE} and the answer as for {@link #memcpyHtoD MEMCPY_HTOD}.
     */
    @Call(opcode = 0x0055, kind = CHUNKED, name = "MEMCPY_HTOD_SCATTER")
    void memcpyHtoDScatter(
            int streamId, @Codec("ScatterPieces") List<DeviceRegion> pieces, @Codec("Rest") ByteBuf data);

    // ---- launch

    /** {@code int32 function id, 3 x int32 grid, 3 x int32 block, int32 shared memory bytes, int32 stream id,
     *  uint16 n, n x (uint8 tag, value)}; tags: 1 pointer int64, 2 int32, 3 int64, 4 float32, 5 float64,
     *  6 bytes (uint16 length, bytes). */
    @Call(opcode = 0x0060, kind = ASYNC)
    void launchKernel(int functionId, Dim3 grid, Dim3 block, int sharedMemBytes, int streamId, KernelArgs args);

    // ---- streams and events

    /** {@code int32 stream id}. */
    @Call(opcode = 0x0071, kind = SYNCHRONIZING)
    void streamSynchronize(int streamId);

    // ---- page-locked host memory shared with a client on the worker's host (a launcher's local worker only)

    /**
     * {@code int64 bytes}: page-locked host memory that the worker and its client both map, a region of the worker's
     * shared host regions; OK: {@code int32 region id, string path, int64 nonce}. The path is a file the worker
     * created for it (mode 600, a fresh random name): a page of header ({@code "VGHR"}, the nonce at offset 8) and
     * then the bytes, rounded up to whole pages. The client maps it, checks the nonce and unlinks it. A worker that
     * serves no shared regions (over TCP) answers {@code CUDA_ERROR_NOT_SUPPORTED}; past its bound,
     * {@code CUDA_ERROR_OUT_OF_MEMORY}.
     */
    @Call(opcode = 0x00A0, kind = SYNC)
    void hostRegionCreate(long bytes);

    /** {@code int32 region id}: unmapped on the worker's side once no copy uses it. */
    @Call(opcode = 0x00A1, kind = SYNC)
    void hostRegionFree(int regionId);

    /** {@code int32 stream id, int64 destination, int32 region id, int64 offset, int64 bytes}: the bytes at offset of
     *  the region, copied to the device; none of them travel in the frame. Asynchronous (a program's
     *  {@code cuMemcpyHtoDAsync}): not answered, the region's bytes read in the stream's order. */
    @Call(opcode = 0x00A2, kind = ASYNC_OR_SYNCHRONIZING, name = "MEMCPY_HTOD_FROM_REGION")
    void memcpyHtoDFromRegion(int streamId, long dst, int regionId, long offset, long bytes);

    /** {@code int32 stream id, int64 source, int32 region id, int64 offset, int64 bytes}: the device's bytes, copied
     *  into the region at offset; answered OK when they are there, or, asynchronously, not answered: they are there
     *  when a later synchronizing request is answered. */
    @Call(opcode = 0x00A3, kind = ASYNC_OR_SYNCHRONIZING, name = "MEMCPY_DTOH_TO_REGION")
    void memcpyDtoHToRegion(int streamId, long src, int regionId, long offset, long bytes);
}
