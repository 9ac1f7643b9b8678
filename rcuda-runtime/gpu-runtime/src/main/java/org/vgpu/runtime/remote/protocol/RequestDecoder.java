package org.vgpu.runtime.remote.protocol;

import java.util.ArrayList;
import java.util.List;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;

/**
 * Reads request bodies (layouts: {@link Opcode}) and hands the fields to a {@link RequestVisitor}.
 * A body that is too short, too long or holds impossible values (a zero launch dimension, an
 * unknown argument tag) is a VGPU_PROTOCOL_ERROR raised before the visitor is called; what the
 * values mean is for the visitor's vGPU to judge.
 */
public final class RequestDecoder {
    /** The largest DATA chunk a client may ask for: the body limit less the offset field. */
    public static final int MAX_CHUNK_BYTES = Frames.MAX_BODY_BYTES - Long.BYTES;
    /** The most regions one {@link Opcode#MEMCPY_DTOH_GATHER} may name: as many as fit one body. */
    public static final int MAX_GATHER_REGIONS = (Frames.MAX_BODY_BYTES - 3 * Integer.BYTES) / (2 * Long.BYTES);
    /** Pieces one scatter chunk may name: a table of 1 MiB, which leaves most of a frame to the bytes. */
    public static final int MAX_SCATTER_PIECES = 1 << 16;

    private RequestDecoder() {
    }

    /** Decodes {@code frame} and calls the visitor method of its opcode. The frame stays the caller's. */
    public static void dispatch(Frame frame, RequestVisitor visitor) {
        ByteBuf in = frame.body().duplicate();
        try {
            switch (frame.opcode()) {
                case HELLO -> visitor.hello(frame, Frames.consumed(frame, in, readHello(in)));
                case PING -> visitor.ping(Frames.consumed(frame, in, frame));
                case GOODBYE -> visitor.goodbye(Frames.consumed(frame, in, frame));
                case MEM_GET_INFO -> visitor.memGetInfo(Frames.consumed(frame, in, frame));
                case MODULE_LOAD -> {
                    int moduleId = in.readInt();
                    visitor.moduleLoad(frame, moduleId, in.readSlice(in.readableBytes()));
                }
                case MODULE_UNLOAD -> visitor.moduleUnload(frame, Frames.consumed(frame, in, in.readInt()));
                case MODULE_GET_FUNCTION -> {
                    int moduleId = in.readInt();
                    int functionId = in.readInt();
                    String name = Frames.consumed(frame, in, Frames.readString(in));
                    visitor.moduleGetFunction(frame, moduleId, functionId, name);
                }
                case MEM_ALLOC_AT -> {
                    long address = in.readLong();
                    long bytes = Frames.consumed(frame, in, in.readLong());
                    visitor.memAllocAt(frame, address, bytes);
                }
                case MEM_FREE -> visitor.memFree(frame, Frames.consumed(frame, in, in.readLong()));
                case MEMCPY_HTOD -> {
                    int stream = in.readInt();
                    long dst = in.readLong();
                    visitor.memcpyHtoD(frame, stream, dst, in.readSlice(in.readableBytes()));
                }
                case MEMCPY_DTOH -> {
                    int stream = in.readInt();
                    long src = in.readLong();
                    long bytes = in.readLong();
                    int chunkBytes = readChunkBytes(frame, Frames.consumed(frame, in, in.readInt()));
                    visitor.memcpyDtoH(frame, stream, src, bytes, chunkBytes);
                }
                case MEMCPY_DTOH_GATHER -> {
                    int stream = in.readInt();
                    int chunkBytes = readChunkBytes(frame, in.readInt());
                    List<DeviceRegion> regions = Frames.consumed(frame, in, readRegions(frame, in, in.readableBytes()));
                    visitor.memcpyDtoHGather(frame, stream, regions, chunkBytes);
                }
                case MEMCPY_HTOD_SCATTER -> {
                    int stream = in.readInt();
                    int count = in.getInt(in.readerIndex());
                    if (count < 0 || count > MAX_SCATTER_PIECES) {
                        throw Frames.violation("MEMCPY_HTOD_SCATTER names " + count + " pieces, outside [0, " + MAX_SCATTER_PIECES + "]");
                    }
                    long tableBytes = Integer.BYTES + (long) count * 2 * Long.BYTES;
                    List<DeviceRegion> pieces = readRegions(frame, in, Math.min(in.readableBytes(), tableBytes));
                    long piecesBytes = DeviceRegion.totalBytes(pieces);
                    if (in.readableBytes() != piecesBytes) {
                        throw Frames.violation("MEMCPY_HTOD_SCATTER carries " + in.readableBytes() + " bytes for pieces of "
                                + piecesBytes + " bytes");
                    }
                    visitor.memcpyHtoDScatter(frame, stream, pieces, in.readSlice(in.readableBytes()));
                }
                case MEMCPY_DTOD -> {
                    int stream = in.readInt();
                    long dst = in.readLong();
                    long src = in.readLong();
                    long bytes = Frames.consumed(frame, in, in.readLong());
                    visitor.memcpyDtoD(frame, stream, dst, src, bytes);
                }
                case MEMSET -> {
                    int stream = in.readInt();
                    long dst = in.readLong();
                    int value = in.readInt();
                    int elementSize = in.readUnsignedByte();
                    long count = Frames.consumed(frame, in, in.readLong());
                    if (elementSize != 1 && elementSize != 4) {
                        throw Frames.violation("MEMSET element size must be 1 or 4, got " + elementSize);
                    }
                    visitor.memset(frame, stream, dst, value, elementSize, count);
                }
                case LAUNCH_KERNEL -> {
                    int function = in.readInt();
                    Dim3 grid = readDim3(in, "grid");
                    Dim3 block = readDim3(in, "block");
                    int sharedMemBytes = in.readInt();
                    int stream = in.readInt();
                    KernelArgs args = Frames.consumed(frame, in, readArgs(in));
                    visitor.launchKernel(frame, function, grid, block, sharedMemBytes, stream, args);
                }
                case STREAM_CREATE -> visitor.streamCreate(frame, Frames.consumed(frame, in, in.readInt()));
                case STREAM_SYNCHRONIZE -> visitor.streamSynchronize(frame, Frames.consumed(frame, in, in.readInt()));
                case STREAM_DESTROY -> visitor.streamDestroy(frame, Frames.consumed(frame, in, in.readInt()));
                case EVENT_CREATE -> visitor.eventCreate(frame, Frames.consumed(frame, in, in.readInt()));
                case EVENT_RECORD -> {
                    int event = in.readInt();
                    int stream = Frames.consumed(frame, in, in.readInt());
                    visitor.eventRecord(frame, event, stream);
                }
                case EVENT_SYNCHRONIZE -> visitor.eventSynchronize(frame, Frames.consumed(frame, in, in.readInt()));
                case EVENT_ELAPSED_TIME -> {
                    int startEvent = in.readInt();
                    int endEvent = Frames.consumed(frame, in, in.readInt());
                    visitor.eventElapsedTime(frame, startEvent, endEvent);
                }
                case EVENT_DESTROY -> visitor.eventDestroy(frame, Frames.consumed(frame, in, in.readInt()));
                case CTX_SYNCHRONIZE -> visitor.ctxSynchronize(Frames.consumed(frame, in, frame));
                case WELCOME, PONG, OK, ERROR, DATA -> throw Frames.violation(frame.opcode() + " is not a request");
            }
        } catch (IndexOutOfBoundsException e) {
            throw Frames.violation(frame.opcode() + " body of " + frame.body().readableBytes() + " bytes is truncated");
        }
    }

    /** The HELLO a connection must open with; any other first frame is a protocol error. */
    public static Hello hello(Frame frame) {
        if (frame.opcode() != Opcode.HELLO) {
            throw Frames.violation("a session must open with HELLO, got " + frame.opcode());
        }
        ByteBuf in = frame.body().duplicate();
        try {
            return Frames.consumed(frame, in, readHello(in));
        } catch (IndexOutOfBoundsException e) {
            throw Frames.violation("HELLO body of " + frame.body().readableBytes() + " bytes is truncated");
        }
    }

    private static Hello readHello(ByteBuf in) {
        int magic = in.readInt();
        if (magic != Frames.MAGIC) {
            throw Frames.violation(String.format("HELLO does not start with the vgpu magic number (0x%08x)", magic));
        }
        int version = in.readUnsignedShort();
        int vgpuIndex = in.readInt();
        long base = in.readLong();
        long size = in.readLong();
        String token = Frames.readString(in);
        VaWindow window;
        try {
            window = new VaWindow(vgpuIndex, base, size);
        } catch (VgpuException e) {
            throw Frames.violation("HELLO names an impossible window: " + e.detail());
        }
        return new Hello(version, token, window);
    }

    private static int readChunkBytes(Frame frame, int chunkBytes) {
        if (chunkBytes < 1 || chunkBytes > MAX_CHUNK_BYTES) {
            throw Frames.violation(frame.opcode() + " chunk size " + chunkBytes + " is outside [1, " + MAX_CHUNK_BYTES + "]");
        }
        return chunkBytes;
    }

    /**
     * {@code int32 n, n x (int64 address, int64 bytes)} in the next {@code tableBytes} of the body;
     * the count is checked against them before anything is kept.
     */
    private static List<DeviceRegion> readRegions(Frame frame, ByteBuf in, long tableBytes) {
        int count = in.readInt();
        long table = tableBytes - Integer.BYTES;
        if (count < 0 || (long) count * 2 * Long.BYTES != table) {
            throw Frames.violation(frame.opcode() + " names " + count + " regions in a table of " + table + " bytes");
        }
        List<DeviceRegion> regions = new ArrayList<>(count);
        long total = 0;
        for (int i = 0; i < count; i++) {
            long address = in.readLong();
            long bytes = in.readLong();
            total += bytes;
            if (bytes < 0 || total < 0) {
                throw Frames.violation(frame.opcode() + " region " + i + " has byte count " + bytes
                        + (bytes < 0 ? "" : ", beyond 2^63 bytes in all"));
            }
            regions.add(new DeviceRegion(address, bytes));
        }
        return regions;
    }

    private static Dim3 readDim3(ByteBuf in, String what) {
        int x = in.readInt();
        int y = in.readInt();
        int z = in.readInt();
        if (x < 1 || y < 1 || z < 1) {
            throw Frames.violation("LAUNCH_KERNEL " + what + " (" + x + ", " + y + ", " + z + ") has a dimension below 1");
        }
        return new Dim3(x, y, z);
    }

    private static KernelArgs readArgs(ByteBuf in) {
        int count = in.readUnsignedShort();
        KernelArgs.Builder args = KernelArgs.builder();
        for (int i = 0; i < count; i++) {
            int tag = in.readUnsignedByte();
            switch (tag) {
                case RequestEncoder.ARG_POINTER -> args.pointer(in.readLong());
                case RequestEncoder.ARG_I32 -> args.i32(in.readInt());
                case RequestEncoder.ARG_I64 -> args.i64(in.readLong());
                case RequestEncoder.ARG_F32 -> args.f32(in.readFloat());
                case RequestEncoder.ARG_F64 -> args.f64(in.readDouble());
                case RequestEncoder.ARG_BYTES -> {
                    byte[] bytes = new byte[in.readUnsignedShort()];
                    in.readBytes(bytes);
                    args.bytes(bytes);
                }
                default -> throw Frames.violation("LAUNCH_KERNEL argument " + i + " has unknown type tag " + tag);
            }
        }
        return args.build();
    }
}
