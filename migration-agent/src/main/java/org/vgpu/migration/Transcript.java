package org.vgpu.migration;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * Everything an app read back from its vGPU, as one SHA-256, and how many kernels it launched: two
 * runs with the same transcript digest saw bit-identical results. Does not close the vGPU it wraps.
 */
public final class Transcript extends ForwardingVirtualGpu {
    private final MessageDigest digest;
    private long launches;

    public Transcript(VirtualGpu delegate) {
        super(delegate);
        try {
            digest = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    @Override
    public void memcpyDtoH(MemorySegment dstHost, long srcDevice, long byteCount) {
        super.memcpyDtoH(dstHost, srcDevice, byteCount);
        digest.update(dstHost.asSlice(0, byteCount).toArray(ValueLayout.JAVA_BYTE));
    }

    @Override
    public void launchKernel(
            FunctionHandle function, Dim3 grid, Dim3 block, int sharedMemBytes, StreamHandle stream, KernelArgs args) {
        super.launchKernel(function, grid, block, sharedMemBytes, stream, args);
        launches++;
    }

    public long launches() {
        return launches;
    }

    public String digest() {
        return HexFormat.of().formatHex(digest.digest());
    }

    @Override
    public void close() {}
}
