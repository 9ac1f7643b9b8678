package jcudaprograms;

import static jcuda.driver.JCudaDriver.*;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Optional;

import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

import org.vgpu.job.InterposerPremain;
import org.vgpu.job.JobVgpus;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * Not one of the eight: what one asynchronous launch (of a kernel with nothing to do) and one synchronous 4 KiB copy
 * to the device cost on device 0, as medians over many, for the GPU script to compare plain JCuda with vgpu's path.
 *
 * <p>The copies are timed twice: first as the JVM's first copies ({@code cold}: interpreted and C1-compiled code,
 * which costs the few Java frames of plain JCuda little and vgpu's deeper path microseconds), then after {@value
 * #WARM_UP_COPIES} untimed ones (the headline figure: the steady state, as vgpu's {@code bench} measures it). Each
 * run also times one more copy in the same JVM, to split the ratio: under {@code vgpu run} the vGPU's own {@code
 * VirtualGpu.memcpyHtoD} into a vgpu allocation ({@code runtime}: the shim's share is the headline minus it); under
 * plain JCuda a second copy into cuMemAlloc memory ({@code again}), so both runs time the same interleaving. (A plain
 * copy into VMM memory, as vgpu's allocations are, cannot be made here: JCuda 12.6's cuMemCreate fails whatever it is
 * given, see the native backend's CudaDriverFfm; vgpu's {@code bench} compares the two kinds of memory instead.)
 */
public class JCudaCallCost {
    private static final int BATCHES = 400;
    private static final int LAUNCHES_PER_BATCH = 50;
    private static final int COPIES = 4000;
    private static final int WARM_UP_COPIES = 50_000;
    private static final int BYTES = 4096;

    public static void main(String[] args) {
        setExceptionsEnabled(true);
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, args[0] + "/vectorAdd.ptx");
        CUfunction add = new CUfunction();
        cuModuleGetFunction(add, module, "add");
        CUdeviceptr buffer = new CUdeviceptr();
        cuMemAlloc(buffer, BYTES);
        Pointer parameters =
                Pointer.to(Pointer.to(new int[] {0}), Pointer.to(buffer), Pointer.to(buffer), Pointer.to(buffer));
        byte[] host = new byte[BYTES];

        long[] launch = new long[BATCHES];
        for (int b = 0; b < BATCHES; b++) {
            long start = System.nanoTime();
            for (int i = 0; i < LAUNCHES_PER_BATCH; i++) {
                cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, null, parameters, null);
            }
            launch[b] = (System.nanoTime() - start) / LAUNCHES_PER_BATCH;
            cuCtxSynchronize();
        }

        long[] cold = new long[COPIES];
        for (int i = 0; i < COPIES; i++) {
            long start = System.nanoTime();
            cuMemcpyHtoD(buffer, Pointer.to(host), BYTES);
            cold[i] = System.nanoTime() - start;
        }
        Optional<VirtualGpu> vgpu =
                InterposerPremain.opened().map(JobVgpus::vgpus).map(vgpus -> vgpus.get(0));
        Runnable other =
                vgpu.isPresent() ? runtimeCopy(vgpu.get(), host) : () -> cuMemcpyHtoD(buffer, Pointer.to(host), BYTES);
        for (int i = 0; i < WARM_UP_COPIES; i++) {
            cuMemcpyHtoD(buffer, Pointer.to(host), BYTES);
            other.run();
        }
        long[] copy = new long[COPIES];
        long[] otherCopy = new long[COPIES];
        for (int i = 0; i < COPIES; i++) {
            long start = System.nanoTime();
            cuMemcpyHtoD(buffer, Pointer.to(host), BYTES);
            long between = System.nanoTime();
            other.run();
            copy[i] = between - start;
            otherCopy[i] = System.nanoTime() - between;
        }
        System.out.println("call cost: launch " + median(launch) + " ns, copy 4 KiB " + median(copy) + " ns, cold "
                + median(cold) + " ns, " + (vgpu.isPresent() ? "runtime " : "again ") + median(otherCopy) + " ns");
        cuMemFree(buffer);
        cuCtxDestroy(context);
    }

    /** vgpu's own call for the same copy, into an allocation of the vGPU that the program's device 0 is. */
    private static Runnable runtimeCopy(VirtualGpu gpu, byte[] host) {
        long address = gpu.memAlloc(BYTES);
        return () -> gpu.memcpyHtoD(address, MemorySegment.ofArray(host), BYTES);
    }

    private static long median(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
