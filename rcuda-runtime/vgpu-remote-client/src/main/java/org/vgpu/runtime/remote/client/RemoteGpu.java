package org.vgpu.runtime.remote.client;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.core.ModuleImage;
import org.vgpu.runtime.memory.Allocation;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;
import org.vgpu.runtime.remote.protocol.RequestDecoder;

/**
 * A vGPU whose device is on another node, driven through its GPU worker. The shared validation of
 * {@link org.vgpu.runtime.core.AbstractVirtualGpu} runs here first, so bad pointers, handles and launches fail without a
 * round trip; this client's window allocator picks every address and the worker maps the same
 * address on its device, re-validating everything.
 *
 * <p>Launches, asynchronous copies and memsets, stream and event creation, event records and stream waits are
 * batched and never wait; synchronous calls flush the batch and wait for their reply, and report
 * a failed asynchronous call of before, as CUDA does. Module, function, stream and event ids on the
 * wire are chosen here, which is what lets their creation be pipelined.
 *
 * <p>The calls a worker serves one to one ({@code VirtualGpu}'s {@code @RemoteCall}s: event records and
 * synchronizes, stream waits, elapsed times, context synchronizes, module variables, function
 * attributes, the destroys, which send nothing while the vGPU closes, and the stream and event creations,
 * which send the id {@link #newId} gives) are sent by {@link OneToOneClientCalls}, generated, each
 * handle as the id the hooks below give; those written here have a remote form of their own.
 */
public final class RemoteGpu extends OneToOneClientCalls<RemoteGpu.Module, RemoteGpu.Function, Integer, Integer> {
    public static final String NAME = "remote";

    /** A module as the worker knows it. */
    record Module(int remoteId) {}

    /** A function as the worker knows it, with the parameter sizes the worker read from its module. */
    record Function(int remoteId, KernelSignature workerSignature) {}

    private static final int DEFAULT_STREAM = 0;
    private final WorkerConnection connection;
    private final ChunkedCopies copies;
    private final SharedHostMemory sharedHostMemory;
    private final DeviceProperties properties;
    private final AtomicInteger nextRemoteId = new AtomicInteger(1);
    /** Set by {@link #close}: the worker frees everything at goodbye, so nothing is freed one by one. */
    private volatile boolean closing;

    private RemoteGpu(VaWindow window, WorkerConnection connection) {
        super(window);
        this.connection = connection;
        this.copies = connection.copies();
        this.sharedHostMemory = new SharedHostMemory(connection, connection.noSharedHostMemory());
        this.properties = connection.welcome().device();
    }

    /**
     * Opens a session on {@code endpoint}'s worker for {@code window}. The vGPU owns the endpoint:
     * it is closed with the vGPU, or at once when the session cannot be opened.
     *
     * @param ssl TLS for the connection, or null for plain TCP
     */
    public static RemoteGpu connect(
            EventLoopGroup group, WorkerEndpoint endpoint, VaWindow window, RemoteConfig config, SslContext ssl) {
        try {
            return new RemoteGpu(window, WorkerConnection.open(group, endpoint, window, config, ssl));
        } catch (RuntimeException e) {
            try {
                endpoint.close();
            } catch (Exception release) {
                e.addSuppressed(release);
            }
            throw e;
        }
    }

    /** What this vGPU has forwarded to its worker and waited for since it was opened. Cheap: no call to the worker. */
    public RemoteCounters counters() {
        return connection.counters();
    }

    /** For the generated calls; this class being final, the JIT inlines it and the ids below. */
    @Override
    WorkerConnection connection() {
        return connection;
    }

    @Override
    boolean closing() {
        return closing;
    }

    @Override
    int moduleId(Module module) {
        return module.remoteId();
    }

    @Override
    int functionId(Function function) {
        return function.remoteId();
    }

    /** A stream's backend object here is its id on the wire, 0 for the default stream. */
    @Override
    int streamId(Integer stream) {
        return stream;
    }

    @Override
    int eventId(Integer event) {
        return event;
    }

    @Override
    int newId() {
        return nextRemoteId.getAndIncrement();
    }

    /** A stream's backend object here is its id on the wire. */
    @Override
    Integer createdStream(int id) {
        return id;
    }

    @Override
    Integer createdEvent(int id) {
        return id;
    }

    /** How the session's bulk bytes travel ({@link org.vgpu.runtime.remote.transport.BulkBytePath#describe}). */
    public String bulkPathDescription() {
        return connection.copies().bulkPath().describe();
    }

    /**
     * How many chunks of device-to-host copies the session's stripes read straight into the caller's memory so far
     * ({@link StraightDestinations}); 0 where the session has no stripes.
     */
    public long chunksReadStraightIn() {
        return connection.copies().chunksReadStraightIn();
    }

    /** The worker this vGPU runs on, as errors name it. */
    public String workerDescription() {
        return connection.endpoint().describe();
    }

    @Override
    public String backendName() {
        return NAME;
    }

    @Override
    public DeviceProperties deviceProperties() {
        return properties;
    }

    @Override
    public MemoryInfo memGetInfo() {
        ensureOpen();
        return connection.call((encoder, requestId) -> encoder.memGetInfo(requestId), ReplyDecoder::memoryInfo);
    }

    @Override
    public void close() {
        closing = true;
        super.close();
    }

    // ---- modules

    @Override
    protected Module doModuleLoad(ModuleImage image) {
        int id = newId();
        connection.call((encoder, requestId) -> encoder.moduleLoad(requestId, id, image.bytes()), ReplyDecoder::empty);
        return new Module(id);
    }

    @Override
    protected Function doGetFunction(Module module, String kernelName) {
        int id = newId();
        KernelSignature signature = connection.call(
                (encoder, requestId) -> encoder.moduleGetFunction(requestId, module.remoteId(), id, kernelName),
                result -> ReplyDecoder.kernelSignature(kernelName, result));
        return new Function(id, signature);
    }

    @Override
    protected KernelSignature doBinarySignature(Function function, String kernelName) {
        return function.workerSignature();
    }

    // ---- memory

    /**
     * The worker is sent chunks, not the app's allocations: a shared chunk as an allocation of the
     * whole chunk, a large allocation as itself. Its table then holds chunks, and it checks copies
     * against them; this side checks each against the app's allocation first.
     */
    @Override
    protected void doMap(Allocation chunk) {
        connection.call(
                (encoder, requestId) -> encoder.memAllocAt(requestId, chunk.address(), chunk.requestedBytes()),
                ReplyDecoder::empty);
    }

    /**
     * One request for many chunks (a migration's replay places thousands of allocations in tens of
     * chunks), as many as fit a frame each; a later batch that fails frees the earlier ones.
     */
    @Override
    protected void doMapAll(List<Allocation> chunks) {
        List<DeviceRegion> regions = chunks.stream()
                .map(chunk -> new DeviceRegion(chunk.address(), chunk.requestedBytes()))
                .toList();
        int mapped = 0;
        try {
            while (mapped < regions.size()) {
                List<DeviceRegion> batch =
                        regions.subList(mapped, Math.min(regions.size(), mapped + RequestDecoder.MAX_GATHER_REGIONS));
                connection.call((encoder, requestId) -> encoder.memAllocAllAt(requestId, batch), ReplyDecoder::empty);
                mapped += batch.size();
            }
        } catch (RuntimeException e) {
            throw unmapAfterFailure(chunks.subList(0, mapped), e);
        }
    }

    @Override
    protected void doUnmap(Allocation chunk) {
        if (!closing) {
            connection.call((encoder, requestId) -> encoder.memFree(requestId, chunk.address()), ReplyDecoder::empty);
        }
    }

    /**
     * With a worker on this host, memory the worker shares and has page-locked by its driver ({@link
     * SharedHostMemory}), whose copies carry no bytes; else plain native memory: the network stack copies anyway,
     * so there is nothing to gain from pinning it here.
     */
    @Override
    protected MemorySegment doAllocHost(long bytes, Arena arena) {
        return sharedHostMemory.allocate(bytes, arena).orElseGet(() -> arena.allocate(bytes, 64));
    }

    @Override
    protected void doFreeHost(long address) {
        sharedHostMemory.forget(address, closing);
    }

    /** How many of this vGPU's host allocations are memory it shares with its worker now. */
    public int sharedHostAllocations() {
        return sharedHostMemory.regionCount();
    }

    /** What this vGPU's page-locked host memory is now, in a few words: shared with its worker or its own, and why. */
    public String sharedHostMemoryDescription() {
        return sharedHostMemory.describe();
    }

    // ---- copies and memsets

    /**
     * From memory shared with the worker, one request that names it (MEMCPY_HTOD_FROM_REGION): no byte crosses the
     * connection. The synchronous copy waits for the worker's answer; the asynchronous one is sent without waiting, as
     * CUDA returns before such a copy is done (the app may change those bytes once it has synchronized with the
     * stream), and its failure comes at the next synchronizing call. From any other memory, in chunks ({@link
     * ChunkedCopies}).
     */
    @Override
    protected void doMemcpyHtoD(long dst, MemorySegment src, long bytes, Integer stream, boolean async) {
        Optional<SharedHostMemory.Place> shared = sharedHostMemory.find(src, bytes);
        if (shared.isPresent()) {
            SharedHostMemory.Place at = shared.get();
            onStream(
                    (encoder, requestId) -> encoder.memcpyHtoDFromRegion(
                            requestId, async, stream, dst, at.regionId(), at.offset(), bytes),
                    async);
        } else {
            copies.copyToDevice(dst, src, bytes, stream, async);
        }
    }

    /** Into memory shared with the worker, as {@link #doMemcpyHtoD} (MEMCPY_DTOH_TO_REGION); else in chunks. */
    @Override
    protected void doMemcpyDtoH(MemorySegment dst, long src, long bytes, Integer stream, boolean async) {
        Optional<SharedHostMemory.Place> shared = sharedHostMemory.find(dst, bytes);
        if (shared.isPresent()) {
            SharedHostMemory.Place at = shared.get();
            onStream(
                    (encoder, requestId) -> encoder.memcpyDtoHToRegion(
                            requestId, async, stream, src, at.regionId(), at.offset(), bytes),
                    async);
        } else {
            copies.copyToHost(dst, src, bytes, stream, async);
        }
    }

    /** A request CUDA's asynchronous form leaves on the stream: sent without waiting in that form, answered in the other. */
    private void onStream(WorkerConnection.Request request, boolean async) {
        if (async) {
            connection.send(request);
        } else {
            connection.call(request, ReplyDecoder::empty);
        }
    }

    /** One request for all the regions (or for as many as one frame can name), so small regions cost one round trip together. */
    @Override
    protected void doMemcpyDtoHGather(MemorySegment dst, List<DeviceRegion> regions, Integer stream) {
        gather(dst, regions, stream, false);
    }

    /**
     * As {@link #memcpyDtoHGatherAsync}, for a caller that keeps {@code dstHost} allocated, and neither reads nor
     * writes it, until it has synchronized {@code stream} with success, or until this vGPU is closed: the session's
     * stripes may then read the gather's chunks straight into {@code dstHost} as they arrive, before their frames,
     * where they overlap no other copy into host memory in flight (a migration's mem-sync into its staging buffers).
     */
    public void memcpyDtoHGatherAsyncIntoKeptMemory(
            MemorySegment dstHost, List<DeviceRegion> srcRegions, StreamHandle stream) {
        ensureOpen();
        gather(dstHost, gatherRegions(dstHost, srcRegions), stream(stream), true);
    }

    private void gather(MemorySegment dst, List<DeviceRegion> regions, Integer stream, boolean keptMemory) {
        long offset = 0;
        for (int from = 0; from < regions.size() || from == 0; from += RequestDecoder.MAX_GATHER_REGIONS) {
            List<DeviceRegion> part =
                    regions.subList(from, Math.min(regions.size(), from + RequestDecoder.MAX_GATHER_REGIONS));
            long bytes = DeviceRegion.totalBytes(part);
            copies.gatherToHost(dst.asSlice(offset, bytes), part, stream, true, keptMemory);
            offset += bytes;
        }
    }

    /** A {@link #forwardAsync forwarded} copy in flight. */
    @FunctionalInterface
    public interface Forwarding {
        /**
         * Returns once every byte was read from the source's worker and sent on to the target's; the
         * writes are then queued on the target's stream, which a synchronize of it waits for.
         *
         * @throws VgpuException what failed: the read, or the target's connection (lost, say)
         */
        void await();
    }

    /**
     * Copies {@code regions}, allocations of this vGPU, to the same addresses of {@code target}, a
     * remote vGPU on another worker, without landing them in this process's memory: each chunk this
     * worker reads is sent on to the target's worker as it arrives, in the buffer it arrived in, as a
     * write queued on {@code targetStream} there. A copy relayed through host memory would wait for a
     * whole buffer to arrive before writing it, and copy every byte in and out here. The read is
     * queued on {@code stream}. Both sides' regions are checked first; nothing is sent if either
     * lacks one.
     *
     * @return the copy in flight, to await before the target's stream is synchronized
     */
    public Forwarding forwardAsync(
            List<DeviceRegion> regions, StreamHandle stream, RemoteGpu target, StreamHandle targetStream) {
        checkDeviceRegions(regions, "forward source");
        Objects.requireNonNull(target, "target");
        if (target == this) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "a vGPU cannot forward a copy to itself");
        }
        target.checkDeviceRegions(regions, "forward destination");
        Integer from = stream(stream);
        Integer to = target.stream(targetStream);
        List<DeviceRegion> all = List.copyOf(regions);
        List<PendingCopyToHost> parts = new ArrayList<>();
        for (int first = 0; first < all.size(); first += RequestDecoder.MAX_GATHER_REGIONS) {
            List<DeviceRegion> part =
                    all.subList(first, Math.min(all.size(), first + RequestDecoder.MAX_GATHER_REGIONS));
            parts.add(copies.forwardGather(part, from, new ForwardedChunks(part, target.copies, to)));
        }
        return () -> {
            for (PendingCopyToHost part : parts) {
                copies.awaitForwarded(part);
            }
        };
    }

    /** One request, chunked, whose chunks each name their pieces: a worker on a GPU scatters them with the copy kernels. */
    @Override
    protected void doMemcpyHtoDScatter(List<DeviceRegion> regions, MemorySegment src, Integer stream) {
        copies.scatterToDevice(regions, src, stream, true);
    }

    @Override
    protected void doMemcpyDtoD(long dst, long src, long bytes, Integer stream, boolean async) {
        onStream((encoder, requestId) -> encoder.memcpyDtoD(requestId, async, stream, dst, src, bytes), async);
    }

    @Override
    protected void doMemset(long dst, int value, int elementSize, long count, Integer stream, boolean async) {
        onStream(
                (encoder, requestId) -> encoder.memset(requestId, async, stream, dst, value, elementSize, count),
                async);
    }

    // ---- launch

    @Override
    protected void doLaunch(
            Function function, Dim3 grid, Dim3 block, int sharedMemBytes, Integer stream, KernelArgs args) {
        connection.send((encoder, requestId) ->
                encoder.launchKernel(requestId, true, function.remoteId(), grid, block, sharedMemBytes, stream, args));
    }

    // ---- streams, events, synchronization

    @Override
    protected Integer defaultStream() {
        return DEFAULT_STREAM;
    }

    /**
     * A stream whose last work is a device-to-host copy is done when the copy's data is in: that is
     * waited for without a request, unless the worker has something to report. The default stream
     * always asks the worker, since it also orders the work of other streams.
     */
    @Override
    protected void doStreamSynchronize(Integer stream) {
        if (stream != DEFAULT_STREAM && copies.awaitStreamEndingInCopyToHost(stream)) {
            return;
        }
        connection.call((encoder, requestId) -> encoder.streamSynchronize(requestId, stream), ReplyDecoder::empty);
    }

    /** Says goodbye (the worker frees the vGPU), then hands the worker back to whoever supplied it. */
    @Override
    @SuppressWarnings("Finally") // a worker that cannot be handed back is the failure to report, over a lost goodbye
    protected void doClose() {
        try {
            connection.goodbye();
        } finally {
            try {
                connection.endpoint().close();
            } catch (Exception e) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_UNKNOWN,
                        "releasing " + connection.endpoint().describe() + " failed: " + VgpuFailure.describe(e),
                        e);
            }
        }
    }
}
