package org.vgpu.runtime.workloads;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.vgpu.common.error.InputException;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.emulated.KernelTwin;
import org.vgpu.runtime.emulated.KernelTwinRegistry;
import org.vgpu.runtime.kernels.TestKernels;

/** Every workload passes on the CPU emulation, frees what it allocated, and fails when the device is wrong. */
class WorkloadsTest {
    private static final long MEMORY = 1L << 30;

    static Stream<Arguments> workloadsAndSeeds() {
        return Workloads.all().stream()
                .flatMap(workload -> Stream.of(Arguments.of(workload, 1L), Arguments.of(workload, 2L)));
    }

    @ParameterizedTest(name = "{0} seed {1}")
    @MethodSource("workloadsAndSeeds")
    void passesOnTheCpuEmulationAndFreesEverything(Workload workload, long seed) {
        try (EmulatedBackend backend = new EmulatedBackend(1, MEMORY, TestKernels.twins());
                VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(1))) {
            WorkloadResult result = workload.run(gpu, 1, seed);
            assertTrue(result.passed(), result.errorSummary());
            assertEquals(workload.name(), result.workload());
            assertEquals(EmulatedBackend.NAME, result.backend());
            assertTrue(result.comparison().compared() > 0);
            assertFalse(result.detail().isBlank());
            assertEquals(MEMORY, gpu.memGetInfo().free(), "everything the workload allocated is freed");
        }
    }

    @Test
    void aLargerScaleIsALargerProblem() {
        try (EmulatedBackend backend = new EmulatedBackend(1, MEMORY, TestKernels.twins());
                VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            WorkloadResult result = new VectorAddWorkload().run(gpu, 3, 7);
            assertTrue(result.passed(), result.errorSummary());
            assertEquals(
                    3L * VectorAddWorkload.DEFAULT_LENGTH, result.comparison().compared());
        }
    }

    @Test
    void namesAreUniqueAndFindable() {
        List<String> names = Workloads.names();
        assertEquals(names.size(), Set.copyOf(names).size(), names.toString());
        for (String name : names) {
            assertEquals(name, Workloads.named(name).orElseThrow().name());
        }
        assertTrue(Workloads.named("no-such-workload").isEmpty());
    }

    @Test
    void aScaleBelowOneIsRefused() {
        try (EmulatedBackend backend = new EmulatedBackend(1, MEMORY, TestKernels.twins());
                VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            InputException e = assertThrows(InputException.class, () -> new SaxpyWorkload().run(gpu, 0, 1));
            assertTrue(e.getMessage().contains("workload scale must be >= 1, got 0"), e.getMessage());
        }
    }

    /**
     * The test kernels, except that {@code kernel} then changes float {@code index} of the array its
     * pointer argument {@code pointer} names: a device that gets one value wrong.
     */
    private static KernelTwinRegistry twinsChanging(
            String kernel, int pointer, int index, UnaryOperator<Float> change) {
        KernelTwinRegistry twins = TestKernels.twins();
        KernelTwin right = twins.require(kernel);
        return twins.register(kernel, (grid, block, args, memory) -> {
            right.run(grid, block, args, memory);
            MemorySegment value = memory.segment(args.pointer(pointer) + (long) index * Float.BYTES, Float.BYTES);
            value.set(
                    ValueLayout.JAVA_FLOAT_UNALIGNED, 0, change.apply(value.get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0)));
        });
    }

    /** A device that gets one value one ulp wrong must fail the exact check and name the value. */
    @Test
    void aWrongDeviceResultFailsTheWorkload() {
        KernelTwinRegistry twins = twinsChanging(TestKernels.SAXPY, 3, 5, Math::nextUp);
        try (EmulatedBackend backend = new EmulatedBackend(1, MEMORY, twins);
                VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            WorkloadResult result = new SaxpyWorkload().run(gpu, 1, 1);
            assertFalse(result.passed());
            assertEquals(1, result.comparison().mismatches());
            assertTrue(result.errorSummary().contains("y[5]"), result.errorSummary());
        }
    }

    /**
     * The MD workload's device part and its check come apart (an app times the one and does the
     * other later): the simulation frees its memory before any check, and a wrong device result is
     * found when it is checked, not when it is made.
     */
    @Test
    void aLennardJonesSimulationIsCheckedApartFromItsDevicePart() {
        KernelTwinRegistry twins = twinsChanging(TestKernels.LJ_KINETIC_ENERGY, 1, 0, value -> value + 1);
        LennardJonesWorkload workload = new LennardJonesWorkload();
        try (EmulatedBackend right = new EmulatedBackend(1, MEMORY, TestKernels.twins());
                VirtualGpu gpu = right.open(0, VaWindow.forVgpu(0))) {
            LennardJonesWorkload.Simulation simulation = workload.simulate(gpu, 1, 3);
            assertEquals(MEMORY, gpu.memGetInfo().free(), "the device part frees what it allocated");
            WorkloadResult result = workload.check(simulation);
            assertTrue(result.passed(), result.errorSummary());
            assertEquals(simulation.elapsed(), result.elapsed());
            assertTrue(result.detail().contains("201 launches"), result.detail());
        }
        try (EmulatedBackend wrong = new EmulatedBackend(1, MEMORY, twins);
                VirtualGpu gpu = wrong.open(0, VaWindow.forVgpu(0))) {
            WorkloadResult result = workload.check(workload.simulate(gpu, 1, 3));
            assertFalse(result.passed());
            assertEquals(1, result.comparison().mismatches(), result.errorSummary());
            assertTrue(result.errorSummary().contains("kinetic[0]"), result.errorSummary());
        }
    }

    /** A kernel fault ends the run with the vGPU's error, and the run's allocations are still freed. */
    @Test
    void aKernelFaultIsThrownAndNothingLeaks() {
        KernelTwinRegistry twins = TestKernels.twins()
                .register(TestKernels.POINTER_CHASE, (grid, block, args, memory) -> {
                    throw new VgpuException(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, "injected fault");
                });
        try (EmulatedBackend backend = new EmulatedBackend(1, MEMORY, twins);
                VirtualGpu gpu = backend.open(0, VaWindow.forVgpu(0))) {
            VgpuException e = assertThrows(VgpuException.class, () -> new PointerChaseWorkload().run(gpu, 1, 1));
            assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, e.code());
            assertTrue(e.getMessage().contains("injected fault"), e.getMessage());
            assertEquals(MEMORY, gpu.memGetInfo().free());
        }
    }
}
