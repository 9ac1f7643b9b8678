package org.vgpu.runtime.remote.protocol;

import java.lang.foreign.MemorySegment;
import java.util.List;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelArg;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VgpuException;

/**
 * Writes request frames (layouts: {@link Opcode}) straight into a buffer, one method per opcode,
 * without building a message object first: a flyweight in the Aeron/SBE sense, {@link #wrap}ped
 * around whatever buffer collects the next write. Not thread-safe; one per connection, used under
 * the connection's batch lock.
 */
public final class RequestEncoder {
    static final int ARG_POINTER = 1;
    static final int ARG_I32 = 2;
    static final int ARG_I64 = 3;
    static final int ARG_F32 = 4;
    static final int ARG_F64 = 5;
    static final int ARG_BYTES = 6;
    /** A by-value argument's length travels as uint16; CUDA's whole parameter block is smaller anyway. */
    static final int MAX_ARG_BYTES = 0xFFFF;

    private ByteBuf out;

    /** Directs the following writes to {@code buffer}, at its writer index. */
    public RequestEncoder wrap(ByteBuf buffer) {
        this.out = buffer;
        return this;
    }

    public void hello(int requestId, Hello hello) {
        int start = Frames.begin(out, Opcode.HELLO, 0, requestId);
        out.writeInt(Frames.MAGIC);
        out.writeShort(hello.protocolVersion());
        out.writeInt(hello.window().vgpuIndex());
        out.writeLong(hello.window().base());
        out.writeLong(hello.window().size());
        Frames.writeString(out, hello.token());
        Frames.finish(out, start);
    }

    public void ping(int requestId) {
        empty(Opcode.PING, requestId);
    }

    public void goodbye(int requestId) {
        empty(Opcode.GOODBYE, requestId);
    }

    public void memGetInfo(int requestId) {
        empty(Opcode.MEM_GET_INFO, requestId);
    }

    public void moduleLoad(int requestId, int moduleId, byte[] image) {
        if (image.length > Frames.MAX_BODY_BYTES - Integer.BYTES) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "a module image of " + image.length
                    + " bytes exceeds the remote protocol's limit of " + (Frames.MAX_BODY_BYTES - Integer.BYTES) + " bytes");
        }
        int start = Frames.begin(out, Opcode.MODULE_LOAD, 0, requestId);
        out.writeInt(moduleId);
        out.writeBytes(image);
        Frames.finish(out, start);
    }

    public void moduleUnload(int requestId, int moduleId) {
        oneInt(Opcode.MODULE_UNLOAD, 0, requestId, moduleId);
    }

    public void moduleGetFunction(int requestId, int moduleId, int functionId, String kernelName) {
        int start = Frames.begin(out, Opcode.MODULE_GET_FUNCTION, 0, requestId);
        out.writeInt(moduleId);
        out.writeInt(functionId);
        Frames.writeString(out, kernelName);
        Frames.finish(out, start);
    }

    public void memAllocAt(int requestId, long address, long bytes) {
        int start = Frames.begin(out, Opcode.MEM_ALLOC_AT, 0, requestId);
        out.writeLong(address);
        out.writeLong(bytes);
        Frames.finish(out, start);
    }

    public void memFree(int requestId, long address) {
        int start = Frames.begin(out, Opcode.MEM_FREE, 0, requestId);
        out.writeLong(address);
        Frames.finish(out, start);
    }

    /**
     * The header of one host-to-device chunk whose {@code dataBytes} the caller supplies right after
     * it, in this buffer or as the next buffer written to the connection (so that the caller's memory
     * can be sent without a copy).
     */
    public void memcpyHtoDChunkHeader(int requestId, boolean async, boolean more, int streamId, long dst, int dataBytes) {
        int start = Frames.begin(out, Opcode.MEMCPY_HTOD, flags(async, more), requestId);
        out.writeInt(streamId);
        out.writeLong(dst);
        Frames.finishWithTrailing(out, start, dataBytes);
    }

    /** One host-to-device chunk with its bytes copied from {@code src} at {@code offset}. */
    public void memcpyHtoDChunk(int requestId, boolean async, boolean more, int streamId, long dst,
                                MemorySegment src, long offset, int bytes) {
        memcpyHtoDChunkHeader(requestId, async, more, streamId, dst, bytes);
        chunkBytes(src, offset, bytes);
    }

    /** The bytes of a chunk whose header was just written, copied from {@code src} at {@code offset}. */
    public void chunkBytes(MemorySegment src, long offset, int bytes) {
        out.ensureWritable(bytes);
        MemorySegment.copy(src, offset, MemorySegment.ofBuffer(out.nioBuffer(out.writerIndex(), bytes)), 0, bytes);
        out.writerIndex(out.writerIndex() + bytes);
    }

    private void writeRegions(List<DeviceRegion> regions) {
        out.writeInt(regions.size());
        for (DeviceRegion region : regions) {
            out.writeLong(region.address());
            out.writeLong(region.bytes());
        }
    }

    /**
     * The header of one chunk of a scatter, naming the {@code pieces} its {@code dataBytes} go to;
     * the caller supplies the bytes as for {@link #memcpyHtoDChunkHeader}.
     */
    public void memcpyHtoDScatterChunkHeader(int requestId, boolean async, boolean more, int streamId, List<DeviceRegion> pieces,
                                             int dataBytes) {
        if (pieces.size() > RequestDecoder.MAX_SCATTER_PIECES) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "a scatter chunk of " + pieces.size()
                    + " pieces exceeds the remote protocol's limit of " + RequestDecoder.MAX_SCATTER_PIECES);
        }
        int start = Frames.begin(out, Opcode.MEMCPY_HTOD_SCATTER, flags(async, more), requestId);
        out.writeInt(streamId);
        writeRegions(pieces);
        Frames.finishWithTrailing(out, start, dataBytes);
    }

    /** One chunk of a scatter with its bytes copied from {@code src} at {@code offset}. */
    public void memcpyHtoDScatterChunk(int requestId, boolean async, boolean more, int streamId, List<DeviceRegion> pieces,
                                       MemorySegment src, long offset, int bytes) {
        memcpyHtoDScatterChunkHeader(requestId, async, more, streamId, pieces, bytes);
        chunkBytes(src, offset, bytes);
    }

    public void memcpyDtoH(int requestId, boolean async, int streamId, long src, long bytes, int chunkBytes) {
        int start = Frames.begin(out, Opcode.MEMCPY_DTOH, flags(async, false), requestId);
        out.writeInt(streamId);
        out.writeLong(src);
        out.writeLong(bytes);
        out.writeInt(chunkBytes);
        Frames.finish(out, start);
    }

    /** Fails before writing anything when the region table would not fit one frame. */
    public void memcpyDtoHGather(int requestId, boolean async, int streamId, List<DeviceRegion> regions, int chunkBytes) {
        if (regions.size() > RequestDecoder.MAX_GATHER_REGIONS) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "a gather of " + regions.size()
                    + " regions exceeds the remote protocol's limit of " + RequestDecoder.MAX_GATHER_REGIONS + " per request");
        }
        int start = Frames.begin(out, Opcode.MEMCPY_DTOH_GATHER, flags(async, false), requestId);
        out.writeInt(streamId);
        out.writeInt(chunkBytes);
        writeRegions(regions);
        Frames.finish(out, start);
    }

    public void memcpyDtoD(int requestId, boolean async, int streamId, long dst, long src, long bytes) {
        int start = Frames.begin(out, Opcode.MEMCPY_DTOD, flags(async, false), requestId);
        out.writeInt(streamId);
        out.writeLong(dst);
        out.writeLong(src);
        out.writeLong(bytes);
        Frames.finish(out, start);
    }

    public void memset(int requestId, boolean async, int streamId, long dst, int value, int elementSize, long count) {
        int start = Frames.begin(out, Opcode.MEMSET, flags(async, false), requestId);
        out.writeInt(streamId);
        out.writeLong(dst);
        out.writeInt(value);
        out.writeByte(elementSize);
        out.writeLong(count);
        Frames.finish(out, start);
    }

    public void launchKernel(int requestId, boolean async, int functionId, Dim3 grid, Dim3 block, int sharedMemBytes,
                             int streamId, KernelArgs args) {
        for (KernelArg arg : args.asList()) {
            if (arg.size() > MAX_ARG_BYTES) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "a kernel argument of " + arg.size()
                        + " bytes exceeds the remote protocol's limit of " + MAX_ARG_BYTES + " bytes per argument");
            }
        }
        int start = Frames.begin(out, Opcode.LAUNCH_KERNEL, flags(async, false), requestId);
        out.writeInt(functionId);
        writeDim3(grid);
        writeDim3(block);
        out.writeInt(sharedMemBytes);
        out.writeInt(streamId);
        out.writeShort(args.count());
        for (KernelArg arg : args.asList()) {
            writeArg(arg);
        }
        Frames.finish(out, start);
    }

    public void streamCreate(int requestId, boolean async, int streamId) {
        oneInt(Opcode.STREAM_CREATE, flags(async, false), requestId, streamId);
    }

    public void streamSynchronize(int requestId, int streamId) {
        oneInt(Opcode.STREAM_SYNCHRONIZE, 0, requestId, streamId);
    }

    public void streamDestroy(int requestId, boolean async, int streamId) {
        oneInt(Opcode.STREAM_DESTROY, flags(async, false), requestId, streamId);
    }

    public void eventCreate(int requestId, boolean async, int eventId) {
        oneInt(Opcode.EVENT_CREATE, flags(async, false), requestId, eventId);
    }

    public void eventRecord(int requestId, boolean async, int eventId, int streamId) {
        int start = Frames.begin(out, Opcode.EVENT_RECORD, flags(async, false), requestId);
        out.writeInt(eventId);
        out.writeInt(streamId);
        Frames.finish(out, start);
    }

    public void eventSynchronize(int requestId, int eventId) {
        oneInt(Opcode.EVENT_SYNCHRONIZE, 0, requestId, eventId);
    }

    public void eventElapsedTime(int requestId, int startEventId, int endEventId) {
        int start = Frames.begin(out, Opcode.EVENT_ELAPSED_TIME, 0, requestId);
        out.writeInt(startEventId);
        out.writeInt(endEventId);
        Frames.finish(out, start);
    }

    public void eventDestroy(int requestId, boolean async, int eventId) {
        oneInt(Opcode.EVENT_DESTROY, flags(async, false), requestId, eventId);
    }

    public void ctxSynchronize(int requestId) {
        empty(Opcode.CTX_SYNCHRONIZE, requestId);
    }

    private void empty(Opcode opcode, int requestId) {
        Frames.finish(out, Frames.begin(out, opcode, 0, requestId));
    }

    private void oneInt(Opcode opcode, int flags, int requestId, int value) {
        int start = Frames.begin(out, opcode, flags, requestId);
        out.writeInt(value);
        Frames.finish(out, start);
    }

    private void writeDim3(Dim3 dim) {
        out.writeInt(dim.x());
        out.writeInt(dim.y());
        out.writeInt(dim.z());
    }

    private void writeArg(KernelArg arg) {
        switch (arg) {
            case KernelArg.Pointer p -> {
                out.writeByte(ARG_POINTER);
                out.writeLong(p.address());
            }
            case KernelArg.I32 v -> {
                out.writeByte(ARG_I32);
                out.writeInt(v.value());
            }
            case KernelArg.I64 v -> {
                out.writeByte(ARG_I64);
                out.writeLong(v.value());
            }
            case KernelArg.F32 v -> {
                out.writeByte(ARG_F32);
                out.writeFloat(v.value());
            }
            case KernelArg.F64 v -> {
                out.writeByte(ARG_F64);
                out.writeDouble(v.value());
            }
            case KernelArg.Bytes v -> {
                byte[] bytes = v.value();
                out.writeByte(ARG_BYTES);
                out.writeShort(bytes.length);
                out.writeBytes(bytes);
            }
        }
    }

    private static int flags(boolean async, boolean more) {
        return (async ? Frames.FLAG_ASYNC : 0) | (more ? Frames.FLAG_MORE : 0);
    }
}
