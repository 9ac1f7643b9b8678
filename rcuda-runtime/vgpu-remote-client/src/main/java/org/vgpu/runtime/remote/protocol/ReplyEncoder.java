package org.vgpu.runtime.remote.protocol;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.VgpuException;

/**
 * Writes reply frames (layouts: {@link Opcode}) straight into a buffer: the worker's counterpart
 * of {@link RequestEncoder}. The OK replies of the calls a worker serves one to one are generated, in
 * {@link ResultEncoder}; those of the other requests are here. Stateless apart from the wrapped
 * buffer; not thread-safe.
 */
public final class ReplyEncoder extends ResultEncoder {
    /** Error details are cut here: a reply must never exceed a frame because a message was long. */
    static final int MAX_DETAIL_CHARS = 8192;

    public ReplyEncoder wrap(ByteBuf buffer) {
        this.out = buffer;
        return this;
    }

    public void welcome(int requestId, Welcome welcome) {
        int start = Frames.begin(out, Opcode.WELCOME, 0, requestId);
        out.writeShort(welcome.protocolVersion());
        Frames.writeString(out, welcome.workerId());
        out.writeInt(welcome.idleTimeoutMillis());
        DeviceProperties device = welcome.device();
        Frames.writeString(out, device.name());
        out.writeLong(device.totalMemory());
        out.writeInt(device.computeCapabilityMajor());
        out.writeInt(device.computeCapabilityMinor());
        out.writeInt(device.multiprocessorCount());
        out.writeInt(device.maxThreadsPerBlock());
        out.writeInt(device.warpSize());
        out.writeBoolean(device.emulated());
        if (welcome.protocolVersion() >= 2) {
            SharedRegionOffer region = welcome.sharedRegion();
            Frames.writeString(out, region.path());
            out.writeLong(region.nonce());
            Frames.writeString(out, region.note());
            StripeOffer stripes = welcome.stripes();
            // only to a HELLO that offered stripes, which a client that predates them never sends
            if (stripes.offered() || !stripes.note().equals(StripeOffer.NOT_ASKED)) {
                out.writeByte(stripes.stripes());
                Frames.writeString(out, stripes.key());
                Frames.writeString(out, stripes.note());
            }
        }
        Frames.finish(out, start);
    }

    public void pong(int requestId) {
        Frames.finish(out, Frames.begin(out, Opcode.PONG, 0, requestId));
    }

    /** Answer to {@link Opcode#MEM_GET_INFO}. */
    public void ok(int requestId, MemoryInfo info) {
        int start = Frames.begin(out, Opcode.OK, 0, requestId);
        out.writeLong(info.free());
        out.writeLong(info.total());
        Frames.finish(out, start);
    }

    /** Answer to {@link Opcode#MODULE_GET_FUNCTION}. */
    public void ok(int requestId, KernelSignature signature) {
        int start = Frames.begin(out, Opcode.OK, 0, requestId);
        out.writeShort(signature.parameterSizes().size());
        for (int size : signature.parameterSizes()) {
            out.writeInt(size);
        }
        Frames.finish(out, start);
    }

    /** Answer to {@link Opcode#HOST_REGION_CREATE}: the region's id, its file's path and the nonce in it. */
    public void hostRegion(int requestId, int regionId, String path, long nonce) {
        int start = Frames.begin(out, Opcode.OK, 0, requestId);
        out.writeInt(regionId);
        Frames.writeString(out, path);
        out.writeLong(nonce);
        Frames.finish(out, start);
    }

    public void error(int requestId, VgpuException failure) {
        error(requestId, failure.code(), failure.detail());
    }

    public void error(int requestId, ErrorCode code, String detail) {
        int start = Frames.begin(out, Opcode.ERROR, 0, requestId);
        out.writeInt(code.number());
        Frames.writeString(out, code.name());
        Frames.writeString(
                out, detail.length() > MAX_DETAIL_CHARS ? detail.substring(0, MAX_DETAIL_CHARS) + "..." : detail);
        Frames.finish(out, start);
    }

    /**
     * The header of one device-to-host chunk; the caller writes its {@code dataBytes} right after
     * it, for example by copying from the device into this buffer.
     *
     * @param failureKept on the last chunk: the worker keeps an asynchronous failure for the next synchronizing request
     */
    public void dataHeader(int requestId, boolean more, boolean failureKept, long offset, int dataBytes) {
        dataHeader(requestId, more, failureKept, 0, offset, dataBytes);
    }

    /** As {@link #dataHeader(int, boolean, boolean, long, int)}, with the flags {@code pathFlags} of the bulk path the trailer came from. */
    public void dataHeader(
            int requestId, boolean more, boolean failureKept, int pathFlags, long offset, int dataBytes) {
        int start = Frames.begin(
                out,
                Opcode.DATA,
                (more ? Frames.FLAG_MORE : 0) | (failureKept ? Frames.FLAG_FAILURE_KEPT : 0) | pathFlags,
                requestId);
        out.writeLong(offset);
        Frames.finishWithTrailing(out, start, dataBytes);
    }

    /** Bytes a DATA frame adds in front of its data. */
    public static int dataHeaderBytes() {
        return Frames.HEADER_BYTES + Long.BYTES;
    }
}
