package org.vgpu.runtime.kernels;

import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.KernelTwin;
import org.vgpu.runtime.emulated.KernelTwinRegistry;

/**
 * The test kernels of vgpu (src/main/cuda/test_kernels.cu): their PTX, shipped as a resource, and
 * the Java twin of each, which the CPU emulation runs in place of the PTX.
 */
public final class TestKernels {
    /** Classpath location of the PTX that src/main/cuda/build-ptx.sh generates. */
    public static final String PTX_RESOURCE = "/org/vgpu/kernels/test_kernels.ptx";

    public static final String EMPTY_KERNEL = "emptyKernel";
    public static final String VECTOR_ADD = "vectorAdd";
    public static final String SAXPY = "saxpy";
    public static final String MAT_MUL = "matMul";
    public static final String TRANSPOSE = "transpose";
    public static final String NBODY_STEP = "nbodyStep";
    public static final String NBODY_INTEGRATE = "nbodyIntegrate";
    public static final String SW_ANTI_DIAGONAL = "swAntiDiagonal";
    public static final String LJ_INITIAL_INTEGRATE = "ljInitialIntegrate";
    public static final String LJ_APPLY_PERIODIC = "ljApplyPeriodic";
    public static final String LJ_FORCES = "ljForces";
    public static final String LJ_FINAL_INTEGRATE = "ljFinalIntegrate";
    public static final String LJ_KINETIC_ENERGY = "ljKineticEnergy";
    public static final String POINTER_CHASE = "pointerChase";

    /** Every kernel of the PTX with its twin, in the order of the source file. */
    private static final SequencedMap<String, KernelTwin> TWINS = twinTable();

    private TestKernels() {}

    private static SequencedMap<String, KernelTwin> twinTable() {
        SequencedMap<String, KernelTwin> twins = new LinkedHashMap<>();
        twins.put(EMPTY_KERNEL, LinearAlgebraTwins::emptyKernel);
        twins.put(VECTOR_ADD, LinearAlgebraTwins::vectorAdd);
        twins.put(SAXPY, LinearAlgebraTwins::saxpy);
        twins.put(MAT_MUL, LinearAlgebraTwins::matMul);
        twins.put(TRANSPOSE, LinearAlgebraTwins::transpose);
        twins.put(NBODY_STEP, NBodyTwins::nbodyStep);
        twins.put(NBODY_INTEGRATE, NBodyTwins::nbodyIntegrate);
        twins.put(SW_ANTI_DIAGONAL, SmithWatermanTwin::swAntiDiagonal);
        twins.put(LJ_INITIAL_INTEGRATE, LennardJonesTwins::ljInitialIntegrate);
        twins.put(LJ_APPLY_PERIODIC, LennardJonesTwins::ljApplyPeriodic);
        twins.put(LJ_FORCES, LennardJonesTwins::ljForces);
        twins.put(LJ_FINAL_INTEGRATE, LennardJonesTwins::ljFinalIntegrate);
        twins.put(LJ_KINETIC_ENERGY, LennardJonesTwins::ljKineticEnergy);
        twins.put(POINTER_CHASE, PointerChaseTwin::pointerChase);
        return twins;
    }

    /** The PTX text of all test kernels, as {@code moduleLoadData} takes it. */
    public static byte[] ptx() {
        try (InputStream in = TestKernels.class.getResourceAsStream(PTX_RESOURCE)) {
            if (in == null) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_FILE_NOT_FOUND,
                        "test-kernel PTX " + PTX_RESOURCE
                                + " is not on the classpath (regenerate it with src/main/cuda/build-ptx.sh)");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_FILE_NOT_FOUND, "cannot read test-kernel PTX " + PTX_RESOURCE, e);
        }
    }

    /** The kernel entry names, in the order of the source file. */
    public static List<String> kernelNames() {
        return List.copyOf(TWINS.keySet());
    }

    /** Registers the twin of every test kernel into {@code registry} and returns it. */
    public static KernelTwinRegistry registerTwins(KernelTwinRegistry registry) {
        for (Map.Entry<String, KernelTwin> twin : TWINS.entrySet()) {
            registry.register(twin.getKey(), twin.getValue());
        }
        return registry;
    }

    /** A new registry holding the twins of all test kernels. */
    public static KernelTwinRegistry twins() {
        return registerTwins(new KernelTwinRegistry());
    }
}
