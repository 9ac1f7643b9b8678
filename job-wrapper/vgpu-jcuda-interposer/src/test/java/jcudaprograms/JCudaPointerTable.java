package jcudaprograms;

import static jcuda.driver.JCudaDriver.*;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/**
 * A kernel taking {@code float**}: each row is an allocation of its own, and the table of the rows' device pointers is
 * built on the host as {@code Pointer.to(CUdeviceptr[])} and copied to the device, as JCuda programs pass arrays of
 * arrays. The table is read back into fresh {@code CUdeviceptr}s too.
 */
public class JCudaPointerTable {
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
        cuModuleLoad(module, args[0] + "/pointerTable.ptx");
        CUfunction sumRows = new CUfunction();
        cuModuleGetFunction(sumRows, module, "sumRows");

        int rows = 12;
        int columns = 1000;
        float[] expected = new float[rows];
        CUdeviceptr[] rowPointers = new CUdeviceptr[rows];
        for (int r = 0; r < rows; r++) {
            float[] row = new float[columns];
            for (int c = 0; c < columns; c++) {
                row[c] = ((r * 31 + c) % 97) * 0.25f;
                expected[r] += row[c];
            }
            rowPointers[r] = new CUdeviceptr();
            cuMemAlloc(rowPointers[r], (long) columns * Sizeof.FLOAT);
            cuMemcpyHtoD(rowPointers[r], Pointer.to(row), (long) columns * Sizeof.FLOAT);
        }
        CUdeviceptr table = new CUdeviceptr();
        cuMemAlloc(table, (long) rows * Sizeof.POINTER);
        cuMemcpyHtoD(table, Pointer.to(rowPointers), (long) rows * Sizeof.POINTER);
        CUdeviceptr sums = new CUdeviceptr();
        cuMemAlloc(sums, (long) rows * Sizeof.FLOAT);

        Pointer parameters = Pointer.to(
                Pointer.to(table), Pointer.to(sums), Pointer.to(new int[] {rows}), Pointer.to(new int[] {columns}));
        cuLaunchKernel(sumRows, 1, 1, 1, 32, 1, 1, 0, null, parameters, null);
        cuCtxSynchronize();
        float[] result = new float[rows];
        cuMemcpyDtoH(Pointer.to(result), sums, (long) rows * Sizeof.FLOAT);
        Results.report("pointer table (" + rows + " rows)", result, expected, 1e-5f);

        CUdeviceptr[] readBack = new CUdeviceptr[rows];
        for (int r = 0; r < rows; r++) {
            readBack[r] = new CUdeviceptr();
        }
        cuMemcpyDtoH(Pointer.to(readBack), table, (long) rows * Sizeof.POINTER);
        int same = 0;
        for (int r = 0; r < rows; r++) {
            same += readBack[r].equals(rowPointers[r]) ? 1 : 0;
        }
        System.out.println("pointer table read back: " + same + " of " + rows + " pointers as written");

        for (CUdeviceptr row : rowPointers) {
            cuMemFree(row);
        }
        cuMemFree(table);
        cuMemFree(sums);
        cuCtxDestroy(context);
    }
}
