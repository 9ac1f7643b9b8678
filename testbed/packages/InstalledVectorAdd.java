import java.lang.foreign.MemorySegment;

import org.vgpu.api.VirtualGpus;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/** The install scenario's job program: a vector add on every vGPU of the job, local and borrowed, each checked. */
public class InstalledVectorAdd {
    public static void main(String[] args) {
        int n = 1 << 14;
        long bytes = (long) n * Float.BYTES;
        float[] a = new float[n];
        float[] b = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = i;
            b[i] = 0.5f * i;
        }
        try (VirtualGpus gpus = VirtualGpus.fromEnvironment()) {
            System.out.println("GPUs: " + gpus);
            for (int k = 0; k < gpus.count(); k++) {
                VirtualGpu gpu = gpus.gpu(k);
                float[] c = new float[n];
                long da = gpu.memAlloc(bytes);
                long db = gpu.memAlloc(bytes);
                long dc = gpu.memAlloc(bytes);
                gpu.memcpyHtoD(da, MemorySegment.ofArray(a), bytes);
                gpu.memcpyHtoD(db, MemorySegment.ofArray(b), bytes);
                ModuleHandle module = gpu.moduleLoadData(TestKernels.ptx());
                FunctionHandle vectorAdd = gpu.moduleGetFunction(module, "vectorAdd");
                KernelArgs arguments =
                        KernelArgs.builder().pointer(da).pointer(db).pointer(dc).i32(n).build();
                gpu.launchKernel(vectorAdd, Dim3.of((n + 255) / 256), Dim3.of(256), 0, StreamHandle.DEFAULT, arguments);
                gpu.memcpyDtoH(MemorySegment.ofArray(c), dc, bytes);
                for (int i = 0; i < n; i++) {
                    if (c[i] != 1.5f * i) {
                        System.out.println("vGPU " + k + ": WRONG at " + i + ": " + c[i]);
                        System.exit(1);
                    }
                }
                System.out.println("vGPU " + k + " (" + gpu.deviceProperties().name() + "): vector add of " + n
                        + " floats right");
                gpu.memFree(da);
                gpu.memFree(db);
                gpu.memFree(dc);
                gpu.moduleUnload(module);
            }
        }
    }
}
