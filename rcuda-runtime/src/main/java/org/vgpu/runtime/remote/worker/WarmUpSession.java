package org.vgpu.runtime.remote.worker;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.RequestDecoder;
import org.vgpu.runtime.remote.protocol.RequestEncoder;

/**
 * A session the worker serves itself before it listens, through the same decoder, executor,
 * staging ring and device code as a client's, over an in-memory channel: copies both ways, and
 * gathers of many small regions. A migration out of a fresh worker is otherwise the first time its
 * JIT sees those paths: measured on H200s, a fresh worker served a 64 MiB state of 4 KiB regions
 * 2.5 times slower than one that had served a few reads before (README.md, "Remote GPUs").
 */
final class WarmUpSession {
    /** System property: true or false warms a worker up or not whatever its backend (default: native ones only). */
    static final String PROPERTY = "vgpu.worker.warm-up";
    /** Rounds of copies: enough for the JIT to compile the per-chunk and per-region paths (64 thousand regions). */
    static final int ROUNDS = 64;
    /** One allocation that chunks are copied into and out of. */
    private static final long STATE_BYTES = 4L << 20;
    /**
     * Small allocations whose regions are gathered: a migrated state of many small allocations makes
     * the worker's region check walk from allocation to allocation, a path that gathers within one
     * allocation never take (measured on H200s: a worker warmed on one allocation still served its
     * first gather of 16384 allocations 15 ms slower than its second). Each takes a mapping granule
     * of device memory, 256 MiB in all, for the warm-up's second.
     */
    private static final int SMALL_ALLOCATIONS = 128;
    private static final long SMALL_ALLOCATION_BYTES = 64L << 10;
    private static final int REGION_BYTES = 4096;
    /** Regions lie every 8 KiB in their allocation, as a live table's do, never back to back. */
    private static final long REGION_STRIDE = 8L << 10;
    private static final int STREAM = 1;
    /** A window of this process only: the warm-up ends before any client can ask for one. */
    private static final VaWindow WINDOW = VaWindow.forVgpu(VaWindow.MAX_VGPUS - 1);

    private WarmUpSession() {
    }

    /**
     * Serves the warm-up session on {@code device} on this thread.
     *
     * @return how long it took
     * @throws VgpuException what the session failed with: the device cannot serve a client either
     */
    static Duration run(GpuBackend backend, int device) {
        long start = System.nanoTime();
        RepliesChecked replies = new RepliesChecked();
        EmbeddedChannel channel = new EmbeddedChannel(replies);
        SessionExecutor executor = new SessionExecutor(channel, backend,
                new WorkerConfig("127.0.0.1", 0, device, "warm-up", WorkerConfig.DEFAULT_IDLE_TIMEOUT, 0));
        try {
            for (Frame frame : requests()) {
                executor.submit(frame);
            }
            executor.run();
            SessionExecutor.Outcome outcome = executor.outcome().get();
            if (!outcome.clean() || replies.failedRequest != 0) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "the worker's warm-up session failed: "
                        + (outcome.clean() ? "request " + replies.failedRequest + " got an error" : outcome.reason()));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "interrupted while warming up");
        } catch (ExecutionException e) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "the worker's warm-up session failed: " + e.getCause(), e);
        } finally {
            channel.finishAndReleaseAll();
        }
        return Duration.ofNanos(System.nanoTime() - start);
    }

    /**
     * Stands for the socket: takes each buffer as it is written, while a DATA chunk's staging slot
     * still holds it, notes the first ERROR frame and drops the rest. A buffer holds whole frames:
     * gathered replies, or one DATA chunk.
     */
    private static final class RepliesChecked extends ChannelOutboundHandlerAdapter {
        private int failedRequest;

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            ByteBuf replies = (ByteBuf) msg;
            try {
                for (int at = replies.readerIndex(); at < replies.writerIndex(); at += Frames.LENGTH_FIELD_BYTES + replies.getInt(at)) {
                    if (failedRequest == 0 && replies.getUnsignedShort(at + Frames.LENGTH_FIELD_BYTES) == Opcode.ERROR.code()) {
                        failedRequest = replies.getInt(at + Frames.LENGTH_FIELD_BYTES + 4);
                    }
                }
            } finally {
                replies.release();
            }
            promise.trySuccess();
        }
    }

    /**
     * HELLO, allocations, rounds of a chunk copied in, the large allocation copied out, and 4 KiB
     * regions of the small allocations gathered out (as many bytes), then GOODBYE; decoded as a
     * worker receives them.
     */
    private static List<Frame> requests() {
        long state = WINDOW.base();
        int chunk = RequestDecoder.DEFAULT_CHUNK_BYTES;
        ByteBuf wire = Unpooled.directBuffer();
        RequestEncoder encoder = new RequestEncoder().wrap(wire);
        int id = 1;
        encoder.hello(id++, new Hello(Frames.PROTOCOL_VERSION, "", WINDOW));
        encoder.memAllocAt(id++, state, STATE_BYTES);
        List<DeviceRegion> regions = new ArrayList<>();
        for (int a = 0; a < SMALL_ALLOCATIONS; a++) {
            long allocation = state + STATE_BYTES + a * VaWindow.GRANULARITY;
            encoder.memAllocAt(id++, allocation, SMALL_ALLOCATION_BYTES);
            for (long offset = 0; offset < SMALL_ALLOCATION_BYTES; offset += REGION_STRIDE) {
                regions.add(new DeviceRegion(allocation + offset, REGION_BYTES));
            }
        }
        encoder.streamCreate(id++, true, STREAM);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(chunk);
            for (int round = 0; round < ROUNDS; round++) {
                encoder.memcpyHtoDChunk(id++, true, false, STREAM, state + round % (STATE_BYTES / chunk) * chunk, host, 0, chunk);
                encoder.memcpyDtoH(id++, true, STREAM, state, STATE_BYTES, chunk);
                encoder.memcpyDtoHGather(id++, true, STREAM, regions, chunk);
                encoder.streamSynchronize(id++, STREAM);
            }
        }
        encoder.goodbye(id);
        EmbeddedChannel decoder = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
        decoder.writeInbound(wire);
        List<Frame> frames = new ArrayList<>();
        for (Frame frame = decoder.readInbound(); frame != null; frame = decoder.readInbound()) {
            frames.add(frame);
        }
        decoder.finishAndReleaseAll();
        return frames;
    }
}
