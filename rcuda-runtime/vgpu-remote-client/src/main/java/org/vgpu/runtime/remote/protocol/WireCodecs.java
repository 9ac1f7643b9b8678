package org.vgpu.runtime.remote.protocol;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.CudaNumbered;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelArg;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelNames;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.surface.WireLayout;

/**
 * How each field type of a request travels, in one place: for a codec {@code X} of
 * {@link RemoteCalls}, {@code readX} reads it from a body (refusing what no client may send with a
 * VGPU_PROTOCOL_ERROR), {@code writeX} writes it, and {@code checkX}, where there is one, refuses
 * a value the protocol cannot carry before anything of its frame is written. The generated
 * {@link RequestEncoder} and {@link RequestDispatch} call them, and for the results of
 * {@code VirtualGpu}'s one-to-one calls {@link ResultEncoder} and {@link ResultDecoder}: every
 * primitive type a call takes or returns has its codec here, and every enum of CUDA's numbered
 * constants travels by {@code CudaNumbered}'s, so such a call needs none of its own.
 */
final class WireCodecs {
    static final int ARG_POINTER = 1;
    static final int ARG_I32 = 2;
    static final int ARG_I64 = 3;
    static final int ARG_F32 = 4;
    static final int ARG_F64 = 5;
    static final int ARG_BYTES = 6;
    /** A by-value argument's length travels as uint16; CUDA's whole parameter block is smaller anyway. */
    static final int MAX_ARG_BYTES = 0xFFFF;
    /** A module image shares its body with the module id. */
    static final int MAX_MODULE_IMAGE_BYTES = Frames.MAX_BODY_BYTES - Integer.BYTES;

    private WireCodecs() {}

    // ---- numbers and strings

    @WireLayout("int32")
    static int readInt32(ByteBuf in) {
        return in.readInt();
    }

    static void writeInt32(ByteBuf out, int value) {
        out.writeInt(value);
    }

    @WireLayout("int64")
    static long readInt64(ByteBuf in) {
        return in.readLong();
    }

    static void writeInt64(ByteBuf out, long value) {
        out.writeLong(value);
    }

    @WireLayout("float32 (its IEEE 754 bits as an int32)")
    static float readFloat32(ByteBuf in) {
        return in.readFloat();
    }

    static void writeFloat32(ByteBuf out, float value) {
        out.writeFloat(value);
    }

    /** {@code uint8}, 0 or 1: any other value is a peer's mistake, not a truth value. */
    @WireLayout("uint8 (0 or 1)")
    static boolean readBoolean(ByteBuf in) {
        int value = in.readUnsignedByte();
        if (value > 1) {
            throw Frames.violation("a boolean must be 0 or 1, got " + value);
        }
        return value == 1;
    }

    static void writeBoolean(ByteBuf out, boolean value) {
        out.writeByte(value ? 1 : 0);
    }

    @WireLayout("string (int32 byte count, then that many bytes of UTF-8)")
    static String readString(ByteBuf in) {
        return Frames.readString(in);
    }

    static void writeString(ByteBuf out, String value) {
        Frames.writeString(out, value);
    }

    // ---- device queries

    /**
     * {@code int32}: CUDA's number of a constant of an enum of them ({@code DeviceAttribute},
     * {@code FunctionAttribute}, ...), the codec of every such enum that has none of its own; one this
     * peer does not know is the other peer's mistake.
     */
    @WireLayout("int32 (CUDA's number of the constant)")
    static <E extends Enum<E> & CudaNumbered> E readCudaNumbered(ByteBuf in, Class<E> type) {
        int number = in.readInt();
        for (E constant : type.getEnumConstants()) {
            if (constant.cudaNumber() == number) {
                return constant;
            }
        }
        String what = type.getSimpleName().replaceAll("([a-z])([A-Z])", "$1 $2").toLowerCase(Locale.ROOT);
        throw Frames.violation(what + " " + number + " is not one this worker answers");
    }

    static void writeCudaNumbered(ByteBuf out, CudaNumbered constant) {
        out.writeInt(constant.cudaNumber());
    }

    // ---- the session

    @WireLayout(
            "int32 magic (VGPU_WIRE_MAGIC), uint16 protocol version, int32 vGPU index, int64 window base, int64 window size, string session token (empty for a local worker); from version 2: uint8 offers (bit 0: shared memory; bit 3: stripes whose chunk headers name their request and offset, then uint8 stripe count; bit 2: joins a session as a stripe, then uint8 stripe index, the token being the session's stripe key; bit 1, stripes whose headers named neither, is refused)")
    static Hello readHello(ByteBuf in) {
        int magic = in.readInt();
        if (magic != Frames.MAGIC) {
            throw Frames.violation(String.format("HELLO does not start with the vgpu magic number (0x%08x)", magic));
        }
        int version = in.readUnsignedShort();
        int vgpuIndex = in.readInt();
        long base = in.readLong();
        long size = in.readLong();
        String token = Frames.readString(in);
        boolean offersSharedMemory = false;
        int stripes = 0;
        int stripeIndex = -1;
        if (version >= 2) {
            int offers = in.readUnsignedByte();
            if ((offers & ~(HELLO_OFFERS_SHARED_MEMORY | HELLO_OFFERS_STRIPES | HELLO_JOINS_STRIPE)) != 0
                    || (offers & (HELLO_OFFERS_STRIPES | HELLO_JOINS_STRIPE))
                            == (HELLO_OFFERS_STRIPES | HELLO_JOINS_STRIPE)) {
                throw Frames.violation(String.format("HELLO offers unknown bulk paths 0x%02x", offers));
            }
            offersSharedMemory = (offers & HELLO_OFFERS_SHARED_MEMORY) != 0;
            if ((offers & HELLO_OFFERS_STRIPES) != 0) {
                stripes = in.readUnsignedByte();
                if (stripes == 0) {
                    throw Frames.violation("HELLO offers stripes but names 0 of them");
                }
            } else if ((offers & HELLO_JOINS_STRIPE) != 0) {
                stripeIndex = in.readUnsignedByte();
            }
        }
        VaWindow window;
        try {
            window = new VaWindow(vgpuIndex, base, size);
        } catch (VgpuException e) {
            throw Frames.violation("HELLO names an impossible window: " + e.detail());
        }
        return new Hello(version, token, window, offersSharedMemory, stripes, stripeIndex);
    }

    /** Bit 0 of a version-2 HELLO's offers: the client takes bulk bytes through shared memory. */
    static final int HELLO_OFFERS_SHARED_MEMORY = 1;
    /**
     * Bit 3: the client would stripe bulk bytes over extra connections, each chunk's header naming its request and
     * offset ({@link org.vgpu.runtime.remote.transport.StripedStreams}); a uint8 count follows. Bit 1 offered stripes
     * whose headers named neither: a worker refuses it as unknown, and a client that offers it says HELLO again
     * without stripes, as to a worker that predates them.
     */
    static final int HELLO_OFFERS_STRIPES = 8;
    /** Bit 2: this connection joins an open session as a stripe; a uint8 index follows. */
    static final int HELLO_JOINS_STRIPE = 4;

    static void writeHello(ByteBuf out, Hello hello) {
        out.writeInt(Frames.MAGIC);
        out.writeShort(hello.protocolVersion());
        out.writeInt(hello.window().vgpuIndex());
        out.writeLong(hello.window().base());
        out.writeLong(hello.window().size());
        Frames.writeString(out, hello.token());
        if (hello.protocolVersion() >= 2) {
            int offers = (hello.offersSharedMemory() ? HELLO_OFFERS_SHARED_MEMORY : 0)
                    | (hello.stripes() > 0 ? HELLO_OFFERS_STRIPES : 0)
                    | (hello.joinsStripe() ? HELLO_JOINS_STRIPE : 0);
            out.writeByte(offers);
            if (hello.stripes() > 0) {
                out.writeByte(hello.stripes());
            } else if (hello.joinsStripe()) {
                out.writeByte(hello.stripeIndex());
            }
        }
    }

    // ---- bytes to the end of the body

    /** A module image: the rest of the body. */
    @WireLayout("rest (the image's bytes to the end of the body, at most VGPU_WIRE_MAX_MODULE_IMAGE_BYTES)")
    static ByteBuf readModuleImage(ByteBuf in) {
        return readRest(in);
    }

    static void checkModuleImage(byte[] image) {
        if (image.length > MAX_MODULE_IMAGE_BYTES) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "a module image of " + image.length + " bytes exceeds the remote protocol's limit of "
                            + MAX_MODULE_IMAGE_BYTES + " bytes");
        }
    }

    static void writeModuleImage(ByteBuf out, byte[] image) {
        out.writeBytes(image);
    }

    /** A chunk's bytes: the rest of the body, written by the caller after the generated header. */
    @WireLayout("rest (bytes to the end of the body, written after the other fields)")
    static ByteBuf readRest(ByteBuf in) {
        return in.readSlice(in.readableBytes());
    }

    // ---- copies

    /** The most a DATA chunk may carry, as a client asks for it. */
    @WireLayout("int32 (1 to the body limit less 8)")
    static int readChunkSize(Frame frame, ByteBuf in) {
        int chunkBytes = in.readInt();
        if (chunkBytes < 1 || chunkBytes > RequestDecoder.MAX_CHUNK_BYTES) {
            throw Frames.violation(frame.opcode() + " chunk size " + chunkBytes + " is outside [1, "
                    + RequestDecoder.MAX_CHUNK_BYTES + "]");
        }
        return chunkBytes;
    }

    static void writeChunkSize(ByteBuf out, int chunkBytes) {
        out.writeInt(chunkBytes);
    }

    /** A gather's regions: a table that fills the rest of the body. */
    @WireLayout("int32 n, n x (int64 address, int64 bytes), filling the rest of the body")
    static List<DeviceRegion> readGatherRegions(Frame frame, ByteBuf in) {
        return readRegions(frame, in, in.readableBytes());
    }

    /** Fails before anything is written when the region table would not fit one frame. */
    static void checkGatherRegions(List<DeviceRegion> regions) {
        if (regions.size() > RequestDecoder.MAX_GATHER_REGIONS) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "a gather of " + regions.size() + " regions exceeds the remote protocol's limit of "
                            + RequestDecoder.MAX_GATHER_REGIONS + " per request");
        }
    }

    static void writeGatherRegions(ByteBuf out, List<DeviceRegion> regions) {
        writeRegions(out, regions);
    }

    /** The pieces of one scatter chunk, whose bytes must fill the rest of the body exactly. */
    @WireLayout(
            "int32 n (at most 65536), n x (int64 destination, int64 bytes); the bytes after them are exactly the pieces' bytes")
    static List<DeviceRegion> readScatterPieces(Frame frame, ByteBuf in) {
        int count = in.getInt(in.readerIndex());
        if (count < 0 || count > RequestDecoder.MAX_SCATTER_PIECES) {
            throw Frames.violation(frame.opcode() + " names " + count + " pieces, outside [0, "
                    + RequestDecoder.MAX_SCATTER_PIECES + "]");
        }
        long tableBytes = Integer.BYTES + (long) count * 2 * Long.BYTES;
        List<DeviceRegion> pieces = readRegions(frame, in, Math.min(in.readableBytes(), tableBytes));
        long piecesBytes = DeviceRegion.totalBytes(pieces);
        // a chunk in a shared slot is checked against the pieces once its slot is read
        if (!frame.inSlot() && in.readableBytes() != piecesBytes) {
            throw Frames.violation(frame.opcode() + " carries " + in.readableBytes() + " bytes for pieces of "
                    + piecesBytes + " bytes");
        }
        return pieces;
    }

    static void checkScatterPieces(List<DeviceRegion> pieces) {
        if (pieces.size() > RequestDecoder.MAX_SCATTER_PIECES) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "a scatter chunk of " + pieces.size() + " pieces exceeds the remote protocol's limit of "
                            + RequestDecoder.MAX_SCATTER_PIECES);
        }
    }

    static void writeScatterPieces(ByteBuf out, List<DeviceRegion> pieces) {
        writeRegions(out, pieces);
    }

    /** One region, {@code int64 address, int64 bytes}: a module variable's, as the worker's window has it. */
    @WireLayout("int64 address (in the vGPU's window), int64 bytes")
    static DeviceRegion readDeviceRegion(ByteBuf in) {
        return new DeviceRegion(in.readLong(), in.readLong());
    }

    static void writeDeviceRegion(ByteBuf out, DeviceRegion region) {
        out.writeLong(region.address());
        out.writeLong(region.bytes());
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

    private static void writeRegions(ByteBuf out, List<DeviceRegion> regions) {
        out.writeInt(regions.size());
        for (DeviceRegion region : regions) {
            writeDeviceRegion(out, region);
        }
    }

    /** A module's kernel names; the count is checked against the bytes left (each name takes 4 or more). */
    @WireLayout("int32 n, n x string")
    static KernelNames readKernelNames(ByteBuf in) {
        int count = in.readInt();
        if (count < 0 || count > in.readableBytes() / Integer.BYTES) {
            throw Frames.violation(count + " kernel names in a body with " + in.readableBytes() + " bytes left");
        }
        List<String> names = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            names.add(readString(in));
        }
        return new KernelNames(names);
    }

    static void writeKernelNames(ByteBuf out, KernelNames names) {
        out.writeInt(names.names().size());
        for (String name : names.names()) {
            writeString(out, name);
        }
    }

    /** A memset's element size in bytes: 1, 2 or 4. */
    @WireLayout("uint8 (1, 2 or 4)")
    static int readElementSize(Frame frame, ByteBuf in) {
        int elementSize = in.readUnsignedByte();
        if (elementSize != 1 && elementSize != 2 && elementSize != 4) {
            throw Frames.violation(frame.opcode() + " element size must be 1, 2 or 4, got " + elementSize);
        }
        return elementSize;
    }

    static void writeElementSize(ByteBuf out, int elementSize) {
        out.writeByte(elementSize);
    }

    // ---- launches

    @WireLayout("3 x int32 (x, y, z, each at least 1)")
    static Dim3 readDim3(Frame frame, ByteBuf in, String field) {
        int x = in.readInt();
        int y = in.readInt();
        int z = in.readInt();
        if (x < 1 || y < 1 || z < 1) {
            // well framed, a bad value of the call's: that request fails, the session goes on
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "the launch's " + field + " (" + x + ", " + y + ", " + z + ") has a dimension below 1");
        }
        return new Dim3(x, y, z);
    }

    static void writeDim3(ByteBuf out, Dim3 dim) {
        out.writeInt(dim.x());
        out.writeInt(dim.y());
        out.writeInt(dim.z());
    }

    @WireLayout(
            "uint16 n, n x (uint8 tag, value): tag VGPU_WIRE_ARG_POINTER int64, ARG_I32 int32, ARG_I64 int64, ARG_F32 float32, ARG_F64 float64, ARG_BYTES (uint16 length, that many bytes)")
    static KernelArgs readKernelArgs(Frame frame, ByteBuf in) {
        int count = in.readUnsignedShort();
        KernelArgs.Builder args = KernelArgs.builder();
        for (int i = 0; i < count; i++) {
            int tag = in.readUnsignedByte();
            switch (tag) {
                case ARG_POINTER -> args.pointer(in.readLong());
                case ARG_I32 -> args.i32(in.readInt());
                case ARG_I64 -> args.i64(in.readLong());
                case ARG_F32 -> args.f32(in.readFloat());
                case ARG_F64 -> args.f64(in.readDouble());
                case ARG_BYTES -> {
                    byte[] bytes = new byte[in.readUnsignedShort()];
                    in.readBytes(bytes);
                    args.bytes(bytes);
                }
                default -> throw Frames.violation(frame.opcode() + " argument " + i + " has unknown type tag " + tag);
            }
        }
        return args.build();
    }

    static void checkKernelArgs(KernelArgs args) {
        for (KernelArg arg : args.asList()) {
            if (arg.size() > MAX_ARG_BYTES) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        "a kernel argument of " + arg.size() + " bytes exceeds the remote protocol's limit of "
                                + MAX_ARG_BYTES + " bytes per argument");
            }
        }
    }

    /** {@code uint16 n, n x (uint8 tag, value)}; tags: {@link #ARG_POINTER} .. {@link #ARG_BYTES}. */
    static void writeKernelArgs(ByteBuf out, KernelArgs args) {
        out.writeShort(args.count());
        for (KernelArg arg : args.asList()) {
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
    }
}
