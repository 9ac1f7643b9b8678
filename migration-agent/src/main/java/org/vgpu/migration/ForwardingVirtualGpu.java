package org.vgpu.migration;

import java.lang.foreign.MemorySegment;
import java.util.List;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * A VirtualGpu that passes every call to another one, for decorators that change a few calls: the
 * benchmark's "migrate after so many launches" trigger, tests' failing workers and transcripts.
 */
public abstract class ForwardingVirtualGpu implements VirtualGpu {
    protected final VirtualGpu delegate;

    protected ForwardingVirtualGpu(VirtualGpu delegate) {
        this.delegate = delegate;
    }

    @Override
    public VaWindow window() {
        return delegate.window();
    }

    @Override
    public String backendName() {
        return delegate.backendName();
    }

    @Override
    public DeviceProperties deviceProperties() {
        return delegate.deviceProperties();
    }

    @Override
    public MemoryInfo memGetInfo() {
        return delegate.memGetInfo();
    }

    @Override
    public ModuleHandle moduleLoadData(byte[] image) {
        return delegate.moduleLoadData(image);
    }

    @Override
    public void moduleUnload(ModuleHandle module) {
        delegate.moduleUnload(module);
    }

    @Override
    public FunctionHandle moduleGetFunction(ModuleHandle module, String kernelName) {
        return delegate.moduleGetFunction(module, kernelName);
    }

    @Override
    public KernelSignature functionSignature(FunctionHandle function) {
        return delegate.functionSignature(function);
    }

    @Override
    public long memAlloc(long bytes) {
        return delegate.memAlloc(bytes);
    }

    @Override
    public void memAllocAt(long address, long bytes) {
        delegate.memAllocAt(address, bytes);
    }

    @Override
    public void memFree(long address) {
        delegate.memFree(address);
    }

    @Override
    public MemorySegment memAllocHost(long bytes) {
        return delegate.memAllocHost(bytes);
    }

    @Override
    public void memFreeHost(MemorySegment hostMemory) {
        delegate.memFreeHost(hostMemory);
    }

    @Override
    public void memcpyHtoD(long dstDevice, MemorySegment srcHost, long byteCount) {
        delegate.memcpyHtoD(dstDevice, srcHost, byteCount);
    }

    @Override
    public void memcpyDtoH(MemorySegment dstHost, long srcDevice, long byteCount) {
        delegate.memcpyDtoH(dstHost, srcDevice, byteCount);
    }

    @Override
    public void memcpyDtoD(long dstDevice, long srcDevice, long byteCount) {
        delegate.memcpyDtoD(dstDevice, srcDevice, byteCount);
    }

    @Override
    public void memcpyHtoDAsync(long dstDevice, MemorySegment srcHost, long byteCount, StreamHandle stream) {
        delegate.memcpyHtoDAsync(dstDevice, srcHost, byteCount, stream);
    }

    @Override
    public void memcpyDtoHAsync(MemorySegment dstHost, long srcDevice, long byteCount, StreamHandle stream) {
        delegate.memcpyDtoHAsync(dstHost, srcDevice, byteCount, stream);
    }

    @Override
    public void memcpyDtoDAsync(long dstDevice, long srcDevice, long byteCount, StreamHandle stream) {
        delegate.memcpyDtoDAsync(dstDevice, srcDevice, byteCount, stream);
    }

    @Override
    public void memcpyDtoHGatherAsync(MemorySegment dstHost, List<DeviceRegion> srcRegions, StreamHandle stream) {
        delegate.memcpyDtoHGatherAsync(dstHost, srcRegions, stream);
    }

    @Override
    public void memcpyHtoDScatterAsync(List<DeviceRegion> dstRegions, MemorySegment srcHost, StreamHandle stream) {
        delegate.memcpyHtoDScatterAsync(dstRegions, srcHost, stream);
    }

    @Override
    public void memsetD8(long dstDevice, byte value, long count) {
        delegate.memsetD8(dstDevice, value, count);
    }

    @Override
    public void memsetD32(long dstDevice, int value, long count) {
        delegate.memsetD32(dstDevice, value, count);
    }

    @Override
    public void memsetD8Async(long dstDevice, byte value, long count, StreamHandle stream) {
        delegate.memsetD8Async(dstDevice, value, count, stream);
    }

    @Override
    public void memsetD32Async(long dstDevice, int value, long count, StreamHandle stream) {
        delegate.memsetD32Async(dstDevice, value, count, stream);
    }

    @Override
    public void launchKernel(FunctionHandle function, Dim3 grid, Dim3 block, int sharedMemBytes, StreamHandle stream,
                             KernelArgs args) {
        delegate.launchKernel(function, grid, block, sharedMemBytes, stream, args);
    }

    @Override
    public StreamHandle streamCreate() {
        return delegate.streamCreate();
    }

    @Override
    public void streamSynchronize(StreamHandle stream) {
        delegate.streamSynchronize(stream);
    }

    @Override
    public void streamDestroy(StreamHandle stream) {
        delegate.streamDestroy(stream);
    }

    @Override
    public EventHandle eventCreate() {
        return delegate.eventCreate();
    }

    @Override
    public void eventRecord(EventHandle event, StreamHandle stream) {
        delegate.eventRecord(event, stream);
    }

    @Override
    public void eventSynchronize(EventHandle event) {
        delegate.eventSynchronize(event);
    }

    @Override
    public float eventElapsedTime(EventHandle start, EventHandle end) {
        return delegate.eventElapsedTime(start, end);
    }

    @Override
    public void eventDestroy(EventHandle event) {
        delegate.eventDestroy(event);
    }

    @Override
    public void ctxSynchronize() {
        delegate.ctxSynchronize();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
