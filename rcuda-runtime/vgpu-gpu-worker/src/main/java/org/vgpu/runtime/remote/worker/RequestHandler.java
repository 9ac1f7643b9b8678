package org.vgpu.runtime.remote.worker;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.DirectDriverCalls;
import org.vgpu.runtime.api.DriverHandles;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;
import org.vgpu.runtime.remote.protocol.SharedRegionOffer;
import org.vgpu.runtime.remote.protocol.StripeOffer;
import org.vgpu.runtime.remote.protocol.Welcome;
import org.vgpu.runtime.remote.transport.SameHostBulk;

/**
 * What each request means on the worker: it runs on the session's local {@link VirtualGpu}, which
 * re-validates everything (the client is never trusted), with the client's ids mapped to handles
 * ({@link SessionHandles}), bulk copies streamed by {@link BulkCopies}, and the failures of
 * asynchronous requests kept by {@link KeptFailure}. GPU thread only.
 *
 * <p>The requests of the calls a worker serves one to one ({@code VirtualGpu}'s {@code @RemoteCall}s)
 * are served by {@link OneToOneWorkerCalls}, generated, through the hooks below; those written here
 * mean more than one call on the vGPU.
 */
final class RequestHandler extends OneToOneWorkerCalls {
    /** How a request ends the session: the client said goodbye, or its vGPU could not be opened. */
    interface SessionEnd {
        void stop(String reason, boolean cleanly);
    }

    private final GpuBackend backend;
    private final WorkerConfig config;
    private final ReplyBatcher replies;
    private final KeptFailure failures;
    private final SessionHandles handles;
    private final BulkCopies bulk;
    private final SessionEnd end;
    private final SharedHostRegions hostRegions;
    private VirtualGpu gpu;
    /** Why this session's client may not have shared host regions; empty when it may (it is on this host). */
    private String noHostRegions = "the session is not open";

    RequestHandler(
            GpuBackend backend,
            WorkerConfig config,
            ReplyBatcher replies,
            SessionHandles handles,
            BulkCopies bulk,
            KeptFailure failures,
            SharedHostRegions hostRegions,
            SessionEnd end) {
        this.backend = backend;
        this.hostRegions = hostRegions;
        this.config = config;
        this.replies = replies;
        this.handles = handles;
        this.bulk = bulk;
        this.failures = failures;
        this.end = end;
    }

    /** Frees the vGPU, whatever the client left allocated; the first failure is thrown. */
    void closeGpu() {
        VirtualGpu closing = gpu;
        gpu = null;
        hostRegions.freeAllOf(this);
        bulk.close();
        if (closing != null) {
            closing.close();
        }
    }

    // ---- the session

    @Override
    public void hello(Frame frame, Hello hello) {
        if (gpu != null) {
            throw Frames.violation("HELLO arrived in a session that is already open");
        }
        try {
            gpu = backend.open(config.device(), hello.window());
            SharedRegionOffer region = bulk.offerSharedRegion(hello);
            StripeOffer stripes = bulk.offerStripes(hello, region, config.idleTimeout());
            // after the offers: the staging slots are as many as the stripes keep busy
            bulk.open(gpu);
            noHostRegions = bulk.clientOnThisHost(hello)
                    ? ""
                    : "the client did not offer shared memory over TCP: it is on another host, or has" + " -D"
                            + SameHostBulk.PROPERTY + "=off";
            replies.reply()
                    .welcome(
                            frame.requestId(),
                            new Welcome(
                                    hello.protocolVersion(),
                                    config.workerId(),
                                    (int) config.idleTimeout().toMillis(),
                                    gpu.deviceProperties(),
                                    region,
                                    stripes));
        } catch (RuntimeException e) {
            VgpuException failure = KeptFailure.asVgpuException(e);
            replies.reply().error(frame.requestId(), failure);
            end.stop("the vGPU could not be opened: " + failure.getMessage(), false);
        }
    }

    @Override
    public void ping(Frame frame) {
        // answered by the event loop; one that got here was queued behind nothing that needs it
    }

    @Override
    public void goodbye(Frame frame) {
        try {
            closeGpu();
            replies.reply().ok(frame.requestId());
            end.stop("the client said goodbye", true);
        } catch (RuntimeException e) {
            replies.reply().error(frame.requestId(), KeptFailure.asVgpuException(e));
            end.stop("goodbye failed: " + VgpuFailure.describe(e), false);
        }
    }

    // ---- requests without a result: answered OK, or their failure kept when asynchronous

    private interface Call {
        void run();
    }

    private void execute(Frame frame, Call call) {
        if (failures.answeredWithKeptFailure(frame)) {
            return;
        }
        try {
            call.run();
            if (!frame.isAsync()) {
                replies.reply().ok(frame.requestId());
            }
        } catch (RuntimeException e) {
            failures.failed(frame, e);
        }
    }

    /**
     * The driver's handle {@code lookup} finds for this session's handles on the GPU of this process its vGPU runs
     * on now; {@link LibraryDirectCalls#NONE} while it runs elsewhere, before the session opened, or for a handle
     * that is none of the session's (the call, served, then answers why).
     */
    long driverHandle(BiFunction<DriverHandles, SessionHandles, Long> lookup) {
        if (!(gpu instanceof DirectDriverCalls direct)) {
            return LibraryDirectCalls.NONE;
        }
        try {
            return direct.withDriverHandles(onGpu -> lookup.apply(onGpu, handles))
                    .orElse(LibraryDirectCalls.NONE);
        } catch (RuntimeException unknown) {
            return LibraryDirectCalls.NONE;
        }
    }

    /** Lets {@code callers} call the session's vGPU's driver past it; false when the vGPU does not offer that. */
    boolean offerDirectCalls(DirectDriverCalls.DirectCallers callers) {
        if (!(gpu instanceof DirectDriverCalls direct)) {
            return false;
        }
        direct.addDirectCallers(callers);
        return true;
    }

    @Override
    VirtualGpu gpu() {
        if (gpu == null) {
            throw Frames.violation("a request arrived before the session was opened");
        }
        return gpu;
    }

    // ---- the hooks of OneToOneWorkerCalls

    @Override
    ReplyEncoder reply() {
        return replies.reply();
    }

    @Override
    boolean answeredWithKeptFailure(Frame frame) {
        return failures.answeredWithKeptFailure(frame);
    }

    @Override
    void failed(Frame frame, RuntimeException failure) {
        failures.failed(frame, failure);
    }

    @Override
    StreamHandle stream(int id) {
        return handles.stream(id);
    }

    @Override
    EventHandle event(int id) {
        return handles.event(id);
    }

    @Override
    ModuleHandle module(int id) {
        return handles.module(id);
    }

    @Override
    FunctionHandle function(int id) {
        return handles.function(id);
    }

    @Override
    void forgetModule(int id) {
        handles.modules.remove(id);
    }

    @Override
    void forgetStream(int id) {
        handles.streams.remove(id);
    }

    @Override
    void forgetEvent(int id) {
        handles.events.remove(id);
    }

    /** Stream id 0 is the default stream, which no created stream can take. */
    @Override
    void registerStream(int id, StreamHandle handle) {
        if (id == StreamHandle.DEFAULT.id()) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "stream id 0 is the default stream");
        }
        SessionHandles.register(handles.streams, id, "stream", handle);
    }

    @Override
    void registerEvent(int id, EventHandle handle) {
        SessionHandles.register(handles.events, id, "event", handle);
    }

    @Override
    public void memGetInfo(Frame frame) {
        try {
            replies.reply().ok(frame.requestId(), gpu().memGetInfo());
        } catch (RuntimeException e) {
            failures.failed(frame, e);
        }
    }

    // ---- modules

    @Override
    public void moduleLoad(Frame frame, int moduleId, ByteBuf image) {
        byte[] bytes = ByteBufUtil.getBytes(image);
        execute(frame, () -> {
            ModuleHandle module = gpu().moduleLoadData(bytes);
            try {
                SessionHandles.register(handles.modules, moduleId, "module", module);
            } catch (VgpuException e) {
                gpu.moduleUnload(module);
                throw e;
            }
        });
    }

    @Override
    public void moduleGetFunction(Frame frame, int moduleId, int functionId, String kernelName) {
        try {
            FunctionHandle function = gpu().moduleGetFunction(handles.module(moduleId), kernelName);
            SessionHandles.register(handles.functions, functionId, "function", function);
            replies.reply().ok(frame.requestId(), gpu.functionSignature(function));
        } catch (RuntimeException e) {
            failures.failed(frame, e);
        }
    }

    // ---- memory

    @Override
    public void memAllocAt(Frame frame, long address, long bytes) {
        execute(frame, () -> gpu().memAllocAt(address, bytes));
    }

    @Override
    public void memAllocAllAt(Frame frame, List<DeviceRegion> allocations) {
        execute(frame, () -> gpu().memAllocAllAt(allocations));
    }

    @Override
    public void memFree(Frame frame, long address) {
        execute(frame, () -> gpu().memFree(address));
    }

    @Override
    public void memcpyHtoD(Frame frame, int streamId, long dst, ByteBuf data) {
        bulk.memcpyHtoD(frame, streamId, dst, data);
    }

    @Override
    public void memcpyDtoH(Frame frame, int streamId, long src, long bytes, int chunkBytes) {
        bulk.memcpyDtoH(frame, streamId, src, bytes, chunkBytes);
    }

    @Override
    public void memcpyDtoD(Frame frame, int streamId, long dst, long src, long bytes) {
        execute(frame, () -> {
            if (frame.isAsync()) {
                gpu().memcpyDtoDAsync(dst, src, bytes, handles.stream(streamId));
            } else {
                gpu().memcpyDtoD(dst, src, bytes);
            }
        });
    }

    @Override
    public void memset(Frame frame, int streamId, long dst, int value, int elementSize, long count) {
        execute(frame, () -> {
            VirtualGpu device = gpu();
            if (frame.isAsync()) {
                StreamHandle stream = handles.stream(streamId);
                switch (elementSize) {
                    case 1 -> device.memsetD8Async(dst, (byte) value, count, stream);
                    case 2 -> device.memsetD16Async(dst, (short) value, count, stream);
                    default -> device.memsetD32Async(dst, value, count, stream);
                }
            } else {
                switch (elementSize) {
                    case 1 -> device.memsetD8(dst, (byte) value, count);
                    case 2 -> device.memsetD16(dst, (short) value, count);
                    default -> device.memsetD32(dst, value, count);
                }
            }
        });
    }

    @Override
    public void memcpyDtoHGather(Frame frame, int streamId, int chunkBytes, List<DeviceRegion> regions) {
        bulk.memcpyDtoHGather(frame, streamId, chunkBytes, regions);
    }

    @Override
    public void memcpyHtoDScatter(Frame frame, int streamId, List<DeviceRegion> pieces, ByteBuf data) {
        bulk.memcpyHtoDScatter(frame, streamId, pieces, data);
    }

    // ---- page-locked host memory shared with the client

    @Override
    public void hostRegionCreate(Frame frame, long bytes) {
        try {
            gpu(); // only in an open session
            if (!noHostRegions.isEmpty()) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_NOT_SUPPORTED, "no shared host memory for this session: " + noHostRegions);
            }
            SharedHostRegions.Grant grant = hostRegions.create(bytes, this);
            replies.reply()
                    .hostRegion(frame.requestId(), grant.id(), grant.file().toString(), grant.nonce());
        } catch (RuntimeException e) {
            failures.failed(frame, e);
        }
    }

    @Override
    public void hostRegionFree(Frame frame, int regionId) {
        execute(frame, () -> hostRegions.free(regionId));
    }

    @Override
    public void memcpyHtoDFromRegion(Frame frame, int streamId, long dst, int regionId, long offset, long bytes) {
        copyWithRegion(frame, streamId, regionId, offset, bytes, (host, stream) -> {
            if (stream == null) {
                gpu().memcpyHtoD(dst, host, bytes);
            } else {
                gpu().memcpyHtoDAsync(dst, host, bytes, stream);
            }
        });
    }

    @Override
    public void memcpyDtoHToRegion(Frame frame, int streamId, long src, int regionId, long offset, long bytes) {
        copyWithRegion(frame, streamId, regionId, offset, bytes, (host, stream) -> {
            if (stream == null) {
                gpu().memcpyDtoH(host, src, bytes);
            } else {
                gpu().memcpyDtoHAsync(host, src, bytes, stream);
            }
        });
    }

    /**
     * {@code copy} of the region's bytes, on the default stream ({@code null}) or after what the program queued on its
     * stream before; done when answered, as the copies whose bytes travel in the frames.
     */
    private void copyWithRegion(
            Frame frame,
            int streamId,
            int regionId,
            long offset,
            long bytes,
            BiConsumer<MemorySegment, StreamHandle> copy) {
        execute(frame, () -> {
            StreamHandle stream = streamId == StreamHandle.DEFAULT.id() ? null : handles.stream(streamId);
            hostRegions.use(regionId, offset, bytes, host -> {
                copy.accept(host, stream);
                if (stream != null) {
                    gpu().streamSynchronize(stream);
                }
            });
        });
    }

    // ---- launch

    @Override
    public void launchKernel(
            Frame frame, int functionId, Dim3 grid, Dim3 block, int sharedMemBytes, int streamId, KernelArgs args) {
        execute(
                frame,
                () -> gpu().launchKernel(
                                handles.function(functionId),
                                grid,
                                block,
                                sharedMemBytes,
                                handles.stream(streamId),
                                args));
    }

    // ---- streams, events, synchronization

    @Override
    public void streamSynchronize(Frame frame, int streamId) {
        execute(frame, () -> gpu().streamSynchronize(handles.stream(streamId)));
    }
}
