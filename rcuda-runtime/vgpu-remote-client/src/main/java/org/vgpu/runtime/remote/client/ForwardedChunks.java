package org.vgpu.runtime.remote.client;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.remote.protocol.RequestDecoder;

/**
 * Sends the chunks of a gather read from one worker on to another worker as host-to-device
 * copies into the same regions: the chunk at offset {@code o} of the gather holds the regions'
 * bytes from {@code o} on, packed, so it goes to the pieces of the regions those bytes belong to.
 * Each chunk is one request on the target's connection, its bytes the very buffer it arrived in.
 */
final class ForwardedChunks implements PendingCopyToHost.ChunkSink {
    private final List<DeviceRegion> regions;
    /** Where each region's bytes start in the gather. */
    private final long[] starts;

    private final ChunkedCopies target;
    private final int targetStream;

    ForwardedChunks(List<DeviceRegion> regions, ChunkedCopies target, int targetStream) {
        this.regions = regions;
        this.target = target;
        this.targetStream = targetStream;
        this.starts = new long[regions.size()];
        long offset = 0;
        for (int k = 0; k < starts.length; k++) {
            starts[k] = offset;
            offset += regions.get(k).bytes();
        }
    }

    @Override
    public void take(long offset, ByteBuf chunk) {
        try {
            int length = chunk.readableBytes();
            List<DeviceRegion> pieces = pieces(offset, length);
            // a chunk of many small regions may name more pieces than one request can
            int sent = 0;
            for (int from = 0; from < pieces.size(); from += RequestDecoder.MAX_SCATTER_PIECES) {
                List<DeviceRegion> part =
                        pieces.subList(from, Math.min(pieces.size(), from + RequestDecoder.MAX_SCATTER_PIECES));
                int bytes = (int) DeviceRegion.totalBytes(part);
                target.forwardedToDevice(List.copyOf(part), chunk.retainedSlice(sent, bytes), targetStream);
                sent += bytes;
            }
        } finally {
            chunk.release();
        }
    }

    /** The pieces of the regions that bytes {@code offset} to {@code offset + length} of the gather fill. */
    List<DeviceRegion> pieces(long offset, int length) {
        int index = Arrays.binarySearch(starts, offset);
        if (index < 0) {
            index = -index - 2;
        }
        List<DeviceRegion> pieces = new ArrayList<>();
        long end = offset + length;
        for (long at = offset; at < end; index++) {
            DeviceRegion region = regions.get(index);
            long into = at - starts[index];
            long bytes = Math.min(region.bytes() - into, end - at);
            if (bytes > 0) {
                pieces.add(new DeviceRegion(region.address() + into, bytes));
            }
            at += bytes;
        }
        return pieces;
    }
}
