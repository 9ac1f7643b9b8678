package org.vgpu.runtime.remote.protocol;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.KernelArg;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VgpuException;

/** Visitors that write each call down as a line, so a test compares what was decoded with what was encoded. */
final class RecordingVisitors {
    private RecordingVisitors() {}

    static class Requests implements RequestVisitor {
        final List<String> calls = new ArrayList<>();

        private void add(Frame frame, String call) {
            calls.add("#" + frame.requestId() + (frame.isAsync() ? " async" : "") + (frame.hasMore() ? " more" : "")
                    + " " + call);
        }

        @Override
        public void hello(Frame f, Hello h) {
            add(f, "hello v" + h.protocolVersion() + " " + h.window() + " token=" + h.token());
        }

        @Override
        public void ping(Frame f) {
            add(f, "ping");
        }

        @Override
        public void goodbye(Frame f) {
            add(f, "goodbye");
        }

        @Override
        public void memGetInfo(Frame f) {
            add(f, "memGetInfo");
        }

        @Override
        public void moduleLoad(Frame f, int moduleId, ByteBuf image) {
            add(f, "moduleLoad " + moduleId + " " + image.toString(StandardCharsets.US_ASCII));
        }

        @Override
        public void moduleUnload(Frame f, int moduleId) {
            add(f, "moduleUnload " + moduleId);
        }

        @Override
        public void moduleGetFunction(Frame f, int moduleId, int functionId, String kernelName) {
            add(f, "moduleGetFunction " + moduleId + " " + functionId + " " + kernelName);
        }

        @Override
        public void memAllocAt(Frame f, long address, long bytes) {
            add(f, "memAllocAt " + hex(address) + " " + bytes);
        }

        @Override
        public void memAllocAllAt(Frame f, List<DeviceRegion> allocations) {
            add(f, "memAllocAllAt " + table(allocations));
        }

        @Override
        public void memFree(Frame f, long address) {
            add(f, "memFree " + hex(address));
        }

        @Override
        public void memcpyHtoD(Frame f, int streamId, long dst, ByteBuf data) {
            add(f, "memcpyHtoD s" + streamId + " " + hex(dst) + " " + ByteBufUtil.hexDump(data));
        }

        @Override
        public void memcpyDtoH(Frame f, int streamId, long src, long bytes, int chunkBytes) {
            add(f, "memcpyDtoH s" + streamId + " " + hex(src) + " " + bytes + " chunk " + chunkBytes);
        }

        @Override
        public void memcpyDtoHGather(Frame f, int streamId, int chunkBytes, List<DeviceRegion> regions) {
            add(f, "memcpyDtoHGather s" + streamId + " chunk " + chunkBytes + " " + table(regions));
        }

        @Override
        public void memcpyHtoDScatter(Frame f, int streamId, List<DeviceRegion> pieces, ByteBuf data) {
            add(f, "memcpyHtoDScatter s" + streamId + " " + table(pieces) + " " + ByteBufUtil.hexDump(data));
        }

        @Override
        public void hostRegionCreate(Frame f, long bytes) {
            add(f, "hostRegionCreate " + bytes);
        }

        @Override
        public void hostRegionFree(Frame f, int regionId) {
            add(f, "hostRegionFree " + regionId);
        }

        @Override
        public void memcpyHtoDFromRegion(Frame f, int streamId, long dst, int regionId, long offset, long bytes) {
            add(f, "memcpyHtoDFromRegion s" + streamId + " " + hex(dst) + " r" + regionId + "+" + offset + " " + bytes);
        }

        @Override
        public void memcpyDtoHToRegion(Frame f, int streamId, long src, int regionId, long offset, long bytes) {
            add(f, "memcpyDtoHToRegion s" + streamId + " " + hex(src) + " r" + regionId + "+" + offset + " " + bytes);
        }

        private static String table(List<DeviceRegion> regions) {
            StringBuilder table = new StringBuilder();
            for (DeviceRegion region : regions) {
                table.append(' ').append(hex(region.address())).append('+').append(region.bytes());
            }
            return "[" + table.toString().trim() + "]";
        }

        @Override
        public void memcpyDtoD(Frame f, int streamId, long dst, long src, long bytes) {
            add(f, "memcpyDtoD s" + streamId + " " + hex(dst) + " " + hex(src) + " " + bytes);
        }

        @Override
        public void memset(Frame f, int streamId, long dst, int value, int elementSize, long count) {
            add(f, "memset s" + streamId + " " + hex(dst) + " " + hex(value) + " x" + elementSize + " " + count);
        }

        @Override
        public void launchKernel(
                Frame f, int functionId, Dim3 grid, Dim3 block, int shared, int streamId, KernelArgs args) {
            add(
                    f,
                    "launch fn" + functionId + " " + grid + " " + block + " shared " + shared + " s" + streamId + " "
                            + describe(args));
        }

        @Override
        public void streamCreate(Frame f, int streamId) {
            add(f, "streamCreate " + streamId);
        }

        @Override
        public void streamSynchronize(Frame f, int streamId) {
            add(f, "streamSynchronize " + streamId);
        }

        @Override
        public void streamDestroy(Frame f, int streamId) {
            add(f, "streamDestroy " + streamId);
        }

        @Override
        public void streamQuery(Frame f, int streamId) {
            add(f, "streamQuery " + streamId);
        }

        @Override
        public void streamWaitEvent(Frame f, int streamId, int eventId) {
            add(f, "streamWaitEvent s" + streamId + " " + eventId);
        }

        @Override
        public void eventCreate(Frame f, int eventId) {
            add(f, "eventCreate " + eventId);
        }

        @Override
        public void eventRecord(Frame f, int eventId, int streamId) {
            add(f, "eventRecord " + eventId + " s" + streamId);
        }

        @Override
        public void eventQuery(Frame f, int eventId) {
            add(f, "eventQuery " + eventId);
        }

        @Override
        public void eventSynchronize(Frame f, int eventId) {
            add(f, "eventSynchronize " + eventId);
        }

        @Override
        public void eventElapsedTime(Frame f, int start, int end) {
            add(f, "eventElapsedTime " + start + " " + end);
        }

        @Override
        public void eventDestroy(Frame f, int eventId) {
            add(f, "eventDestroy " + eventId);
        }

        @Override
        public void ctxSynchronize(Frame f) {
            add(f, "ctxSynchronize");
        }

        @Override
        public void moduleGetGlobal(Frame f, int moduleId, String name) {
            add(f, "moduleGetGlobal " + moduleId + " " + name);
        }

        @Override
        public void moduleKernelNames(Frame f, int moduleId) {
            add(f, "moduleKernelNames " + moduleId);
        }

        @Override
        public void funcGetAttribute(Frame f, int functionId, FunctionAttribute attribute) {
            add(f, "funcGetAttribute fn" + functionId + " " + attribute);
        }

        @Override
        public void funcSetAttribute(Frame f, int functionId, FunctionAttribute attribute, int value) {
            add(f, "funcSetAttribute fn" + functionId + " " + attribute + " " + value);
        }

        @Override
        public void deviceGetAttribute(Frame f, DeviceAttribute attribute) {
            add(f, "deviceGetAttribute " + attribute);
        }

        @Override
        public void ctxSetLimit(Frame f, ContextLimit limit, long value) {
            add(f, "ctxSetLimit " + limit + " " + value);
        }

        @Override
        public void ctxGetLimit(Frame f, ContextLimit limit) {
            add(f, "ctxGetLimit " + limit);
        }

        @Override
        public void memsetD2D32(Frame f, long dst, long pitch, int value, long width, long height) {
            add(f, String.format("memsetD2D32 0x%x pitch %d 0x%x %dx%d", dst, pitch, value, width, height));
        }

        @Override
        public void memsetD2D32Async(Frame f, long dst, long pitch, int value, long width, long height, int streamId) {
            add(
                    f,
                    String.format(
                            "memsetD2D32Async 0x%x pitch %d 0x%x %dx%d s%d",
                            dst, pitch, value, width, height, streamId));
        }
    }

    static class Replies implements ReplyVisitor {
        final List<String> calls = new ArrayList<>();

        @Override
        public void welcome(int requestId, Welcome welcome) {
            calls.add("#" + requestId + " " + welcome);
        }

        @Override
        public void pong(int requestId) {
            calls.add("#" + requestId + " pong");
        }

        @Override
        public void ok(int requestId, ByteBuf result) {
            calls.add("#" + requestId + " ok " + ByteBufUtil.hexDump(result));
        }

        @Override
        public void error(int requestId, VgpuException failure) {
            calls.add("#" + requestId + " error " + failure.code() + " " + failure.detail());
        }

        @Override
        public void data(int requestId, boolean more, boolean failureKept, long offset, ByteBuf bytes) {
            calls.add("#" + requestId + (more ? " more" : "") + (failureKept ? " failure-kept" : "") + " data @"
                    + offset + " " + ByteBufUtil.hexDump(bytes));
        }
    }

    /** Types and values, so a pointer that came back as an i64 would not pass for the same. */
    static String describe(KernelArgs args) {
        StringBuilder sb = new StringBuilder("[");
        for (var arg : args.asList()) {
            sb.append(sb.length() > 1 ? ", " : "")
                    .append(arg instanceof KernelArg.Bytes b ? "Bytes" + Arrays.toString(b.value()) : arg.toString());
        }
        return sb.append(']').toString();
    }

    private static String hex(long value) {
        return "0x" + Long.toHexString(value);
    }
}
