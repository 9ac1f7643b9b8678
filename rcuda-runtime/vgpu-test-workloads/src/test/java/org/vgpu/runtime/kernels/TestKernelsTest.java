package org.vgpu.runtime.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.core.ModuleImage;

/** The PTX resource and the twin table describe the same kernels, with the parameters the twins read. */
class TestKernelsTest {
    private static final int PTR = 8;
    private static final int I32 = 4;
    private static final int F32 = 4;

    private final ModuleImage ptx = ModuleImage.parse(TestKernels.ptx());

    @Test
    void everyPtxKernelHasATwinAndEveryTwinAPtxKernel() {
        Set<String> inPtx = ptx.ptxKernels().keySet();
        assertEquals(inPtx, Set.copyOf(TestKernels.kernelNames()));
        assertEquals(inPtx, TestKernels.twins().names());
    }

    /** The argument positions the twins read (and the workloads pass) must be the kernel's parameters. */
    @Test
    void kernelParametersAreTheOnesTheTwinsRead() {
        Map<String, List<Integer>> expected = Map.ofEntries(
                Map.entry(TestKernels.EMPTY_KERNEL, List.of()),
                Map.entry(TestKernels.VECTOR_ADD, List.of(PTR, PTR, PTR, I32)),
                Map.entry(TestKernels.SAXPY, List.of(I32, F32, PTR, PTR)),
                Map.entry(TestKernels.MAT_MUL, List.of(PTR, PTR, PTR, I32)),
                Map.entry(TestKernels.TRANSPOSE, List.of(PTR, PTR, I32, I32)),
                Map.entry(TestKernels.NBODY_STEP, List.of(PTR, PTR, I32, F32, F32)),
                Map.entry(TestKernels.NBODY_INTEGRATE, List.of(PTR, PTR, I32, F32)),
                Map.entry(TestKernels.SW_ANTI_DIAGONAL, List.of(PTR, PTR, PTR, I32, I32, I32, I32, I32, I32)),
                Map.entry(TestKernels.LJ_INITIAL_INTEGRATE, List.of(PTR, PTR, PTR, I32, F32, F32)),
                Map.entry(TestKernels.LJ_APPLY_PERIODIC, List.of(PTR, I32, F32)),
                Map.entry(TestKernels.LJ_FORCES, List.of(PTR, PTR, PTR, I32, F32, F32, F32)),
                Map.entry(TestKernels.LJ_FINAL_INTEGRATE, List.of(PTR, PTR, I32, F32)),
                Map.entry(TestKernels.LJ_KINETIC_ENERGY, List.of(PTR, PTR, I32)),
                Map.entry(TestKernels.POINTER_CHASE, List.of(PTR, PTR, I32, I32)));
        assertEquals(expected.keySet(), Set.copyOf(TestKernels.kernelNames()));
        for (Map.Entry<String, List<Integer>> kernel : expected.entrySet()) {
            KernelSignature signature = ptx.ptxSignature(kernel.getKey());
            assertEquals(kernel.getValue(), signature.parameterSizes(), kernel.getKey());
        }
    }

    /** Twins reproduce correctly rounded IEEE arithmetic; fused or approximate instructions would break agreement. */
    @Test
    void ptxHasNoFusedOrApproximateFloatInstructions() {
        String text = new String(TestKernels.ptx(), StandardCharsets.US_ASCII);
        Pattern inexact = Pattern.compile("\\b(fma|mad)\\.[a-z0-9.]*f32|\\.approx\\.|\\bdiv\\.full|\\.ftz\\.");
        assertFalse(
                inexact.matcher(text).find(),
                () -> "PTX contains "
                        + inexact.matcher(text)
                                .results()
                                .findFirst()
                                .map(m -> m.group())
                                .orElse("") + "; rebuild it with src/main/cuda/build-ptx.sh");
    }
}
