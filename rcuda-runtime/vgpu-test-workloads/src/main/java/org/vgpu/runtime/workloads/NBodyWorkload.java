package org.vgpu.runtime.workloads;

import java.util.SplittableRandom;

import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.workloads.Comparison.Tolerance;

/**
 * All-pairs gravitational n-body system (G = 1, softened) advanced by several steps of two
 * launches each: nbodyStep (velocities) then nbodyIntegrate (positions). The CPU reference is the
 * same physics in double precision, so the float results agree within {@link #TOLERANCE}, not bit
 * for bit: each acceleration sums n float terms and ten small steps hardly amplify the rounding;
 * over 40 seeds the largest difference was 2.5e-7, 400 times below the tolerance.
 */
public final class NBodyWorkload implements Workload {
    static final int DEFAULT_BODIES = 512;
    static final int STEPS = 10;
    static final float DT = 0.01f;
    static final float SOFTENING_SQUARED = 0.01f;
    /** Positions are O(1), velocities O(0.1). */
    static final Tolerance TOLERANCE = new Tolerance(1e-4, 1e-4);

    @Override
    public String name() {
        return "nbody";
    }

    @Override
    public String description() {
        return "gravitational n-body, 512 bodies per scale unit, 10 steps of 2 launches; vs double-precision CPU within "
                + TOLERANCE;
    }

    @Override
    public WorkloadResult run(VirtualGpu gpu, int scale, long seed) {
        int n = Workload.scaled(DEFAULT_BODIES, scale);
        SplittableRandom random = new SplittableRandom(seed);
        float[] pos = new float[4 * n];
        for (int i = 0; i < n; i++) {
            pos[4 * i] = -1 + 2 * random.nextFloat();
            pos[4 * i + 1] = -1 + 2 * random.nextFloat();
            pos[4 * i + 2] = -1 + 2 * random.nextFloat();
            pos[4 * i + 3] = (0.5f + random.nextFloat()) / n;
        }
        float[] vel = RandomInputs.uniform(random, 3 * n, -0.05f, 0.05f);

        record State(float[] pos, float[] vel) {}
        var run = DeviceScope.run(gpu, device -> {
            long dpos = device.upload(pos);
            long dvel = device.upload(vel);
            KernelArgs step = KernelArgs.builder()
                    .pointer(dpos)
                    .pointer(dvel)
                    .i32(n)
                    .f32(DT)
                    .f32(SOFTENING_SQUARED)
                    .build();
            KernelArgs integrate = KernelArgs.builder()
                    .pointer(dpos)
                    .pointer(dvel)
                    .i32(n)
                    .f32(DT)
                    .build();
            for (int s = 0; s < STEPS; s++) {
                device.launch1D(TestKernels.NBODY_STEP, n, step);
                device.launch1D(TestKernels.NBODY_INTEGRATE, n, integrate);
            }
            return new State(device.readFloats(dpos, 4 * n), device.readFloats(dvel, 3 * n));
        });

        double[] expectedPos = Comparison.widened(pos);
        double[] expectedVel = Comparison.widened(vel);
        simulate(expectedPos, expectedVel, n);
        Comparison comparison = Comparison.within(
                        "pos", expectedPos, run.output().pos(), TOLERANCE)
                .and(Comparison.within("vel", expectedVel, run.output().vel(), TOLERANCE));
        return new WorkloadResult(
                name(),
                gpu.backendName(),
                comparison,
                run.elapsed(),
                String.format("%d bodies, %d steps, %d launches", n, STEPS, run.launches()));
    }

    /** The reference: velocities from all-pairs softened gravity, then positions, in double precision. */
    private static void simulate(double[] pos, double[] vel, int n) {
        double dt = DT;
        double softeningSquared = SOFTENING_SQUARED;
        for (int step = 0; step < STEPS; step++) {
            for (int i = 0; i < n; i++) {
                double ax = 0;
                double ay = 0;
                double az = 0;
                for (int j = 0; j < n; j++) {
                    double dx = pos[4 * j] - pos[4 * i];
                    double dy = pos[4 * j + 1] - pos[4 * i + 1];
                    double dz = pos[4 * j + 2] - pos[4 * i + 2];
                    double distance = Math.sqrt(dx * dx + dy * dy + dz * dz + softeningSquared);
                    double strength = pos[4 * j + 3] / (distance * distance * distance);
                    ax += dx * strength;
                    ay += dy * strength;
                    az += dz * strength;
                }
                vel[3 * i] += ax * dt;
                vel[3 * i + 1] += ay * dt;
                vel[3 * i + 2] += az * dt;
            }
            for (int i = 0; i < n; i++) {
                for (int k = 0; k < 3; k++) {
                    pos[4 * i + k] += vel[3 * i + k] * dt;
                }
            }
        }
    }
}
