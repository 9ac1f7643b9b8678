package org.vgpu.runtime.remote.protocol;

import java.util.List;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;

/**
 * Receives decoded requests from {@link RequestDecoder#dispatch}, one method per opcode. The
 * {@code frame} gives the request id and flags. Buffers passed in belong to the frame: use them
 * during the call, or retain them.
 */
public interface RequestVisitor {

    void hello(Frame frame, Hello hello);

    void ping(Frame frame);

    void goodbye(Frame frame);

    void memGetInfo(Frame frame);

    void moduleLoad(Frame frame, int moduleId, ByteBuf image);

    void moduleUnload(Frame frame, int moduleId);

    void moduleGetFunction(Frame frame, int moduleId, int functionId, String kernelName);

    void memAllocAt(Frame frame, long address, long bytes);

    void memFree(Frame frame, long address);

    void memcpyHtoD(Frame frame, int streamId, long dst, ByteBuf data);

    void memcpyDtoH(Frame frame, int streamId, long src, long bytes, int chunkBytes);

    void memcpyDtoHGather(Frame frame, int streamId, List<DeviceRegion> regions, int chunkBytes);

    /** One chunk of a scatter: {@code data} goes to {@code pieces}, whose bytes it holds exactly, back to back. */
    void memcpyHtoDScatter(Frame frame, int streamId, List<DeviceRegion> pieces, ByteBuf data);

    void memcpyDtoD(Frame frame, int streamId, long dst, long src, long bytes);

    void memset(Frame frame, int streamId, long dst, int value, int elementSize, long count);

    void launchKernel(Frame frame, int functionId, Dim3 grid, Dim3 block, int sharedMemBytes, int streamId, KernelArgs args);

    void streamCreate(Frame frame, int streamId);

    void streamSynchronize(Frame frame, int streamId);

    void streamDestroy(Frame frame, int streamId);

    void eventCreate(Frame frame, int eventId);

    void eventRecord(Frame frame, int eventId, int streamId);

    void eventSynchronize(Frame frame, int eventId);

    void eventElapsedTime(Frame frame, int startEventId, int endEventId);

    void eventDestroy(Frame frame, int eventId);

    void ctxSynchronize(Frame frame);
}
