package org.vgpu.runtime.nativegpu;

import static jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
import static jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
import static jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
import static jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
import static jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_WARP_SIZE;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

import jcuda.driver.CUdevice;
import jcuda.driver.CUresult;
import jcuda.driver.JCudaDriver;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * The GPUs of this machine, driven through JCuda, with the CUDA virtual memory management calls
 * made through FFM ({@link CudaDriverFfm}) so that every vGPU's memory lies in its fixed window.
 * Device properties are read once, at {@link #load}, because a launch checks its block size
 * against them.
 */
public final class NativeBackend implements GpuBackend {
    public static final String NAME = "native";

    private static final String NOT_HERE = "the native GPU backend cannot run here: ";

    private final DeviceProperties[] devices;
    private final String[] pciBusIds;
    /** Device 0's primary context, retained at the first {@link #hostRegister}: registrations live in it. */
    private PrimaryContext registrationContext; // guarded by this

    private NativeBackend(DeviceProperties[] devices, String[] pciBusIds) {
        this.devices = devices;
        this.pciBusIds = pciBusIds;
    }

    /**
     * Initialises the CUDA driver. Throws VGPU_BACKEND_UNAVAILABLE, saying why, where there is no
     * NVIDIA driver, JCuda's native library cannot load, or the driver sees no device (then as
     * {@link NoDeviceSeen}); never crashes the JVM on a machine without a GPU. May be called again
     * after it failed: cuInit is retried.
     */
    public static NativeBackend load() {
        CudaDriverFfm.requireAvailable();
        int deviceCount;
        try {
            // vgpu checks every CUresult itself and turns it into a VgpuException naming the call.
            JCudaDriver.setExceptionsEnabled(false);
            int result = JCudaDriver.cuInit(0);
            if (result == CUresult.CUDA_ERROR_NO_DEVICE) {
                throw new NoDeviceSeen(
                        "the NVIDIA driver sees no CUDA device (check CUDA_VISIBLE_DEVICES, nvidia-smi, and whether the"
                                + " job's device cgroup admits a GPU)");
            }
            if (result != CudaErrors.CUDA_SUCCESS) {
                throw unavailable("cuInit failed: " + CUresult.stringFor(result) + " (CUresult " + result + ")");
            }
            int[] count = new int[1];
            CudaErrors.check(JCudaDriver.cuDeviceGetCount(count), "cuDeviceGetCount");
            deviceCount = count[0];
        } catch (LinkageError e) {
            throw unavailable("JCuda's native library could not be loaded (" + e.getMessage() + ")");
        }
        if (deviceCount == 0) {
            throw new NoDeviceSeen("the NVIDIA driver reports 0 CUDA devices");
        }
        DeviceProperties[] devices = new DeviceProperties[deviceCount];
        String[] pciBusIds = new String[deviceCount];
        for (int i = 0; i < deviceCount; i++) {
            devices[i] = queryProperties(i);
            pciBusIds[i] = queryPciBusId(i);
        }
        return new NativeBackend(devices, pciBusIds);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean isEmulation() {
        return false;
    }

    @Override
    public int deviceCount() {
        return devices.length;
    }

    @Override
    public DeviceProperties deviceProperties(int device) {
        checkDevice(device);
        return devices[device];
    }

    @Override
    public Optional<String> pciBusId(int device) {
        checkDevice(device);
        return Optional.of(pciBusIds[device]);
    }

    @Override
    public VirtualGpu open(int device, VaWindow window) {
        checkDevice(device);
        return NativeGpu.open(device, window, devices[device]);
    }

    /** Registered in device 0's primary context, portable: every vGPU of this backend copies from it by DMA. */
    @Override
    public synchronized boolean hostRegister(MemorySegment host) {
        if (registrationContext == null) {
            registrationContext = PrimaryContext.retain(CudaDriverFfm.deviceGet(0));
        }
        registrationContext.makeCurrent();
        CudaDriverFfm.memHostRegister(host.address(), host.byteSize());
        return true;
    }

    @Override
    public synchronized void hostUnregister(MemorySegment host) {
        if (registrationContext != null) {
            registrationContext.makeCurrent();
            CudaDriverFfm.memHostUnregister(host.address());
        }
    }

    /** Releases the context the registrations lived in; the vGPUs' own contexts are theirs to release. */
    @Override
    public synchronized void close() {
        if (registrationContext != null) {
            registrationContext.close();
            registrationContext = null;
        }
    }

    private void checkDevice(int device) {
        if (device < 0 || device >= devices.length) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_DEVICE,
                    "GPU " + device + " does not exist (this machine has " + devices.length + ")");
        }
    }

    private static DeviceProperties queryProperties(int ordinal) {
        CUdevice device = new CUdevice();
        CudaErrors.check(JCudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
        byte[] name = new byte[256];
        CudaErrors.check(JCudaDriver.cuDeviceGetName(name, name.length, device), "cuDeviceGetName(" + ordinal + ")");
        long[] totalMemory = new long[1];
        CudaErrors.check(JCudaDriver.cuDeviceTotalMem(totalMemory, device), "cuDeviceTotalMem(" + ordinal + ")");
        return new DeviceProperties(
                nulTerminated(name),
                totalMemory[0],
                attribute(device, ordinal, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                attribute(device, ordinal, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
                attribute(device, ordinal, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                attribute(device, ordinal, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
                attribute(device, ordinal, CU_DEVICE_ATTRIBUTE_WARP_SIZE),
                false);
    }

    /** cuDeviceGetPCIBusId: "domain:bus:device.function" in hex, 13 characters and a NUL at most. */
    private static String queryPciBusId(int ordinal) {
        CUdevice device = new CUdevice();
        CudaErrors.check(JCudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
        String[] busId = new String[1];
        CudaErrors.check(JCudaDriver.cuDeviceGetPCIBusId(busId, 32, device), "cuDeviceGetPCIBusId(" + ordinal + ")");
        String text = busId[0] == null ? "" : busId[0];
        int nul = text.indexOf('\0');
        return (nul < 0 ? text : text.substring(0, nul)).strip();
    }

    private static int attribute(CUdevice device, int ordinal, int attribute) {
        int[] value = new int[1];
        CudaErrors.check(
                JCudaDriver.cuDeviceGetAttribute(value, attribute, device),
                "cuDeviceGetAttribute(" + attribute + ", device " + ordinal + ")");
        return value[0];
    }

    private static String nulTerminated(byte[] bytes) {
        int length = 0;
        while (length < bytes.length && bytes[length] != 0) {
            length++;
        }
        return new String(bytes, 0, length, StandardCharsets.UTF_8);
    }

    private static VgpuException unavailable(String why) {
        return new VgpuException(ErrorCode.VGPU_BACKEND_UNAVAILABLE, NOT_HERE + why);
    }

    /**
     * {@link #load} found the NVIDIA driver but the driver shows this process no GPU: none on the machine, or every
     * one refused by the process's device cgroup. Unlike a missing driver this can change while the process runs (a
     * GPU the tracker grants is admitted later, and a failed cuInit is not sticky: docs/gpu-grants.md), so a job
     * defers its native backend on it ({@link DeferredNativeBackend}).
     */
    public static final class NoDeviceSeen extends VgpuException {
        private static final long serialVersionUID = 1L;

        public NoDeviceSeen(String why) {
            super(ErrorCode.VGPU_BACKEND_UNAVAILABLE, NOT_HERE + why);
        }
    }
}
