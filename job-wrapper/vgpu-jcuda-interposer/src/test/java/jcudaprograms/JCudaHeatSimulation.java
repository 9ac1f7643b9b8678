package jcudaprograms;

import static jcuda.driver.JCudaDriver.*;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/** A simulation loop of many small launches: 1-D heat diffusion, the two buffers swapped every step. */
public class JCudaHeatSimulation {
    static final int STEPS = 400;

    public static void main(String[] args) {
        Results.repeat(args, () -> run(args));
    }

    static void run(String[] args) {
        setExceptionsEnabled(true);
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, args[0] + "/heatStep.ptx");
        CUfunction step = new CUfunction();
        cuModuleGetFunction(step, module, "heatStep");

        int n = 2048;
        float alpha = 0.25f;
        float[] temperature = new float[n];
        for (int i = n / 4; i < n / 2; i++) {
            temperature[i] = 100.0f;
        }
        long bytes = (long) n * Sizeof.FLOAT;
        CUdeviceptr current = new CUdeviceptr();
        CUdeviceptr next = new CUdeviceptr();
        cuMemAlloc(current, bytes);
        cuMemAlloc(next, bytes);
        cuMemcpyHtoD(current, Pointer.to(temperature), bytes);
        for (int s = 0; s < STEPS; s++) {
            Pointer parameters = Pointer.to(
                    Pointer.to(current), Pointer.to(next), Pointer.to(new int[] {n}), Pointer.to(new float[] {alpha}));
            cuLaunchKernel(step, n / 128, 1, 1, 128, 1, 1, 0, null, parameters, null);
            CUdeviceptr swap = current;
            current = next;
            next = swap;
        }
        cuCtxSynchronize();
        float[] result = new float[n];
        cuMemcpyDtoH(Pointer.to(result), current, bytes);

        float[] expected = temperature.clone();
        float[] scratch = new float[n];
        for (int s = 0; s < STEPS; s++) {
            scratch[0] = expected[0];
            scratch[n - 1] = expected[n - 1];
            for (int i = 1; i < n - 1; i++) {
                scratch[i] = expected[i] + alpha * (expected[i - 1] - 2.0f * expected[i] + expected[i + 1]);
            }
            float[] swap = expected;
            expected = scratch;
            scratch = swap;
        }
        Results.report("heat simulation (" + STEPS + " launches)", result, expected, 1e-4f);
        cuMemFree(current);
        cuMemFree(next);
        cuCtxDestroy(context);
    }
}
