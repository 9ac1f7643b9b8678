package org.vgpu.runtime.remote.protocol;

/**
 * What a frame asks for or answers: one opcode per {@link org.vgpu.runtime.api.VirtualGpu} call,
 * plus the session's own frames (handshake, keepalive, goodbye) and the three replies.
 *
 * <p>Body layouts follow each constant; every integer is big-endian, {@code string} is an int32
 * byte count and that many UTF-8 bytes, {@code rest} runs to the end of the frame. Requests marked
 * <em>may be async</em> accept {@link Frames#FLAG_ASYNC}: then the worker sends no reply on
 * success and keeps the first failure for the next synchronizing request. Requests marked
 * <em>synchronizing</em> (when sent without {@link Frames#FLAG_ASYNC}) report such a kept failure
 * instead of executing, as the next synchronizing CUDA call reports an earlier asynchronous error.
 * Every other request is answered by {@link #OK}, {@link #ERROR} or, for {@link #MEMCPY_DTOH} and
 * {@link #MEMCPY_DTOH_GATHER}, {@link #DATA} frames.
 */
public enum Opcode {
    // ---- session

    /** Client's first frame. {@code int32 magic 'VGPU', uint16 version, int32 vgpu index, int64 window base,
     *  int64 window size, string session token}. Answered by {@link #WELCOME} or {@link #ERROR} and a close. */
    HELLO(0x0001, Direction.REQUEST, false, false),
    /** {@code uint16 version, string worker id, int32 idle timeout ms, string device name, int64 total memory,
     *  int32 cc major, int32 cc minor, int32 multiprocessors, int32 max threads per block, int32 warp size,
     *  uint8 emulated}. */
    WELCOME(0x0002, Direction.REPLY, false, false),
    /** Keepalive, empty; answered by {@link #PONG} from the worker's event loop even while a call runs. */
    PING(0x0003, Direction.REQUEST, false, false),
    /** Empty. */
    PONG(0x0004, Direction.REPLY, false, false),
    /** Orderly end of the session, empty: the worker frees the vGPU, answers {@link #OK} and closes. */
    GOODBYE(0x0005, Direction.REQUEST, false, false),

    // ---- replies

    /** Success; {@code rest}: the result, whose layout the request's opcode fixes (see {@link ReplyDecoder}). */
    OK(0x0010, Direction.REPLY, false, false),
    /** Failure: {@code int32 error number, string error name (the CUDA name, e.g. CUDA_ERROR_INVALID_VALUE),
     *  string detail}. Request id 0 reports a failure of the session itself before the connection closes. */
    ERROR(0x0011, Direction.REPLY, false, false),
    /** One chunk of a device-to-host copy: {@code int64 offset into the copy, rest: bytes}.
     *  {@link Frames#FLAG_MORE} on every chunk but the last; the last ends the request. */
    DATA(0x0012, Direction.REPLY, false, false),

    // ---- device

    /** Empty; OK: {@code int64 free, int64 total}. */
    MEM_GET_INFO(0x0020, Direction.REQUEST, false, false),

    // ---- modules

    /** {@code int32 module id (chosen by the client), rest: image}. */
    MODULE_LOAD(0x0030, Direction.REQUEST, false, false),
    /** {@code int32 module id}. */
    MODULE_UNLOAD(0x0031, Direction.REQUEST, false, false),
    /** {@code int32 module id, int32 function id (chosen by the client), string kernel name};
     *  OK: {@code uint16 n, n x int32 parameter size}. */
    MODULE_GET_FUNCTION(0x0032, Direction.REQUEST, false, false),

    // ---- memory

    /** {@code int64 address (chosen by the client's window allocator), int64 bytes}. */
    MEM_ALLOC_AT(0x0040, Direction.REQUEST, false, false),
    /** {@code int64 address}. */
    MEM_FREE(0x0041, Direction.REQUEST, false, false),
    /** One chunk of a host-to-device copy: {@code int32 stream id, int64 destination of this chunk, rest: bytes}.
     *  {@link Frames#FLAG_MORE} on every chunk but the last, all with the same request id and no other
     *  request in between; the request is answered (or its failure kept) after the last chunk. */
    MEMCPY_HTOD(0x0050, Direction.REQUEST, true, true),
    /** {@code int32 stream id, int64 source, int64 bytes, int32 chunk bytes}; answered by {@link #DATA} chunks
     *  of at most chunk bytes, also when asynchronous, or by {@link #ERROR}. */
    MEMCPY_DTOH(0x0051, Direction.REQUEST, true, true),
    /** {@code int32 stream id, int64 destination, int64 source, int64 bytes}. */
    MEMCPY_DTOD(0x0052, Direction.REQUEST, true, true),
    /** {@code int32 stream id, int64 destination, int32 value, uint8 element size (1 or 4), int64 count}. */
    MEMSET(0x0053, Direction.REQUEST, true, true),
    /**
     * Many device regions read into one reply (a migration's mem-sync reads its live regions so):
     * {@code int32 stream id, int32 chunk bytes, int32 n, n x (int64 source, int64 bytes)}, nothing
     * after. Answered as {@link #MEMCPY_DTOH} is, by {@link #DATA} chunks of at most chunk bytes whose
     * offsets count through the regions' bytes laid back to back in their order, also when
     * asynchronous, or by {@link #ERROR}. The body must hold exactly n regions, n >= 0 and every
     * byte count >= 0; their sum is the length of the reply.
     */
    MEMCPY_DTOH_GATHER(0x0054, Direction.REQUEST, true, true),
    /**
     * Packed host bytes written into many device regions (a migration's mem-sync writes a remote
     * target so), in chunks as {@link #MEMCPY_HTOD}: {@code int32 stream id, int32 n, n x (int64
     * destination, int64 bytes), rest: the pieces' bytes back to back}. Each chunk names the pieces
     * its bytes go to, at most {@link RequestDecoder#MAX_SCATTER_PIECES}, and must carry exactly their
     * sum; {@link Frames#FLAG_MORE} and the answer as for {@link #MEMCPY_HTOD}.
     */
    MEMCPY_HTOD_SCATTER(0x0055, Direction.REQUEST, true, true),

    // ---- launch

    /** {@code int32 function id, 3 x int32 grid, 3 x int32 block, int32 shared memory bytes, int32 stream id,
     *  uint16 n, n x (uint8 tag, value)}; tags: 1 pointer int64, 2 int32, 3 int64, 4 float32, 5 float64,
     *  6 bytes (uint16 length, bytes). */
    LAUNCH_KERNEL(0x0060, Direction.REQUEST, true, false),

    // ---- streams and events (ids chosen by the client, so creation is pipelined)

    /** {@code int32 stream id}. */
    STREAM_CREATE(0x0070, Direction.REQUEST, true, false),
    /** {@code int32 stream id}. */
    STREAM_SYNCHRONIZE(0x0071, Direction.REQUEST, false, true),
    /** {@code int32 stream id}. */
    STREAM_DESTROY(0x0072, Direction.REQUEST, true, false),
    /** {@code int32 event id}. */
    EVENT_CREATE(0x0080, Direction.REQUEST, true, false),
    /** {@code int32 event id, int32 stream id}. */
    EVENT_RECORD(0x0081, Direction.REQUEST, true, false),
    /** {@code int32 event id}. */
    EVENT_SYNCHRONIZE(0x0082, Direction.REQUEST, false, true),
    /** {@code int32 start event id, int32 end event id}; OK: {@code float32 milliseconds}. */
    EVENT_ELAPSED_TIME(0x0083, Direction.REQUEST, false, false),
    /** {@code int32 event id}. */
    EVENT_DESTROY(0x0084, Direction.REQUEST, true, false),
    /** Empty. */
    CTX_SYNCHRONIZE(0x0090, Direction.REQUEST, false, true);

    /** Who sends a frame: the client (requests) or the worker (replies). */
    public enum Direction { REQUEST, REPLY }

    private static final Opcode[] BY_CODE = new Opcode[0x100];

    static {
        for (Opcode opcode : values()) {
            BY_CODE[opcode.code] = opcode;
        }
    }

    private final int code;
    private final Direction direction;
    private final boolean mayBeAsync;
    private final boolean synchronizing;

    Opcode(int code, Direction direction, boolean mayBeAsync, boolean synchronizing) {
        this.code = code;
        this.direction = direction;
        this.mayBeAsync = mayBeAsync;
        this.synchronizing = synchronizing;
    }

    /** The value in the frame header. */
    public int code() {
        return code;
    }

    public Direction direction() {
        return direction;
    }

    /** Whether the request may carry {@link Frames#FLAG_ASYNC}. */
    public boolean mayBeAsync() {
        return mayBeAsync;
    }

    /** Whether the request, sent without {@link Frames#FLAG_ASYNC}, reports a kept asynchronous failure. */
    public boolean synchronizing() {
        return synchronizing;
    }

    /** The opcode with header value {@code code}, or null when there is none. */
    public static Opcode fromCode(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }
}
