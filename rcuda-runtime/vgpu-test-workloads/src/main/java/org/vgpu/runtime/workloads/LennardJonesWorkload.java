package org.vgpu.runtime.workloads;

import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;

import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.workloads.Comparison.Tolerance;

/**
 * Lennard-Jones molecular dynamics in the style of LAMMPS's "melt" example: an fcc lattice at
 * reduced density 0.8442 in a periodic box, velocities at temperature 3.0, cutoff 2.5 with the
 * energy shifted to zero there, velocity-Verlet with dt = 0.005. Every step is five small launches
 * (initial integrate, periodic wrap, forces, final integrate, kinetic energy), the launch pattern
 * of an MD code.
 *
 * <p>The CPU reference is the same method in double precision, so results agree within tolerances,
 * not bit for bit. The largest differences come from pairs that sit at the cutoff: float and double
 * put them on different sides, and the force jumps there by about 0.04, which moves a velocity by
 * about 2e-4 per such event. Over 40 seeds the largest differences were 1.4e-5 (positions), 2.9e-4
 * (velocities) and 2.5e-4 (per-atom energies); the tolerances are 20 to 70 times that, while a
 * wrong force or integrator is off by 0.1 or more. Positions are compared through the minimum
 * image, since an atom at a box face may be wrapped on one side and not on the other.
 */
public final class LennardJonesWorkload implements Workload {
    /** 3 x 3 x 3 fcc cells. */
    static final int DEFAULT_ATOMS = 108;

    static final double DENSITY = 0.8442;
    private static final double LATTICE_CONSTANT = Math.cbrt(4 / DENSITY);
    static final double TEMPERATURE = 3.0;
    static final float DT = 0.005f;
    static final int STEPS = 40;
    static final float CUTOFF = 2.5f;
    private static final float CUTOFF_SQUARED = CUTOFF * CUTOFF;
    /** Subtracted from every pair energy, so a pair's energy is zero at the cutoff. */
    private static final float ENERGY_SHIFT = (float) pairEnergy(CUTOFF_SQUARED);

    static final Tolerance POSITION_TOLERANCE = new Tolerance(1e-3, 0);
    static final Tolerance VELOCITY_TOLERANCE = new Tolerance(5e-3, 0);
    static final Tolerance ENERGY_TOLERANCE = new Tolerance(5e-3, 0);

    @Override
    public String name() {
        return "lennard-jones";
    }

    @Override
    public String description() {
        return "Lennard-Jones MD (LAMMPS melt), 108 atoms per scale unit, 40 steps of 5 launches;"
                + " positions, velocities and per-atom energies vs double-precision CPU";
    }

    @Override
    public WorkloadResult run(VirtualGpu gpu, int scale, long seed) {
        return check(simulate(gpu, scale, seed));
    }

    /**
     * One run's device part alone: the inputs drawn from {@code seed}, the simulation on {@code gpu}
     * and what it read back, unchecked. For an app that times its GPU work apart from the checks
     * ({@link #check} later), as an MD code's own time has no CPU rerun of the simulation in it.
     */
    public Simulation simulate(VirtualGpu gpu, int scale, long seed) {
        Inputs inputs = Inputs.draw(scale, seed);
        int n = inputs.atoms();
        float dtf = 0.5f * DT;
        var run = DeviceScope.run(gpu, device -> {
            long dpos = device.upload(inputs.pos());
            long dvel = device.upload(inputs.vel());
            long dforce = device.allocate(3L * n * Float.BYTES);
            long dpotential = device.allocate((long) n * Float.BYTES);
            long dkinetic = device.allocate((long) n * Float.BYTES);
            KernelArgs forces = KernelArgs.builder()
                    .pointer(dpos)
                    .pointer(dforce)
                    .pointer(dpotential)
                    .i32(n)
                    .f32(inputs.box())
                    .f32(CUTOFF_SQUARED)
                    .f32(ENERGY_SHIFT)
                    .build();
            KernelArgs initialIntegrate = KernelArgs.builder()
                    .pointer(dpos)
                    .pointer(dvel)
                    .pointer(dforce)
                    .i32(n)
                    .f32(dtf)
                    .f32(DT)
                    .build();
            KernelArgs applyPeriodic =
                    KernelArgs.builder().pointer(dpos).i32(n).f32(inputs.box()).build();
            KernelArgs finalIntegrate = KernelArgs.builder()
                    .pointer(dvel)
                    .pointer(dforce)
                    .i32(n)
                    .f32(dtf)
                    .build();
            KernelArgs kineticEnergy =
                    KernelArgs.builder().pointer(dvel).pointer(dkinetic).i32(n).build();
            device.launch1D(TestKernels.LJ_FORCES, n, forces);
            for (int step = 0; step < STEPS; step++) {
                device.launch1D(TestKernels.LJ_INITIAL_INTEGRATE, n, initialIntegrate);
                device.launch1D(TestKernels.LJ_APPLY_PERIODIC, n, applyPeriodic);
                device.launch1D(TestKernels.LJ_FORCES, n, forces);
                device.launch1D(TestKernels.LJ_FINAL_INTEGRATE, n, finalIntegrate);
                device.launch1D(TestKernels.LJ_KINETIC_ENERGY, n, kineticEnergy);
            }
            return new State(
                    device.readFloats(dpos, 3 * n),
                    device.readFloats(dvel, 3 * n),
                    device.readFloats(dpotential, n),
                    device.readFloats(dkinetic, n));
        });
        return new Simulation(inputs, gpu.backendName(), run.output(), run.elapsed(), run.launches());
    }

    /** Checks what {@code simulation} read back against the double-precision CPU reference run from the same inputs. */
    public WorkloadResult check(Simulation simulation) {
        Inputs inputs = simulation.inputs;
        int n = inputs.atoms();
        Reference reference = new Reference(inputs.pos(), inputs.vel(), inputs.box(), CUTOFF_SQUARED, ENERGY_SHIFT);
        double startEnergy = reference.totalEnergy();
        for (int step = 0; step < STEPS; step++) {
            reference.step(DT);
        }
        State device = simulation.state;
        Comparison comparison = Comparison.within(
                        "pos", reference.nearestImages(device.pos()), device.pos(), POSITION_TOLERANCE)
                .and(Comparison.within("vel", reference.vel, device.vel(), VELOCITY_TOLERANCE))
                .and(Comparison.within("potential", reference.potential, device.potential(), ENERGY_TOLERANCE))
                .and(Comparison.within("kinetic", reference.kinetic(), device.kinetic(), ENERGY_TOLERANCE));
        double endEnergy = sum(device.potential()) + sum(device.kinetic());
        return new WorkloadResult(
                name(),
                simulation.backend,
                comparison,
                simulation.elapsed,
                String.format(
                        "%d atoms, %d steps, %d launches, energy/atom %.4f -> %.4f",
                        n, STEPS, simulation.launches, startEnergy / n, endEnergy / n));
    }

    /**
     * One run's device part, not yet checked.
     *
     * @see #simulate
     * @see #check
     */
    public static final class Simulation {
        private final Inputs inputs;
        private final String backend;
        private final State state;
        private final Duration elapsed;
        private final int launches;

        private Simulation(Inputs inputs, String backend, State state, Duration elapsed, int launches) {
            this.inputs = inputs;
            this.backend = backend;
            this.state = state;
            this.elapsed = elapsed;
            this.launches = launches;
        }

        /** Wall time of the device part, as {@link WorkloadResult#elapsed()}. */
        public Duration elapsed() {
            return elapsed;
        }
    }

    /** A run's starting point, drawn from its scale and seed: an fcc lattice with thermal velocities. */
    private record Inputs(float box, float[] pos, float[] vel) {
        static Inputs draw(int scale, long seed) {
            int cells = cellsPerEdge(Workload.scaled(DEFAULT_ATOMS, scale));
            return new Inputs(
                    (float) (cells * LATTICE_CONSTANT),
                    fccLattice(cells, LATTICE_CONSTANT),
                    thermalVelocities(new SplittableRandom(seed), 4 * cells * cells * cells));
        }

        int atoms() {
            return pos.length / 3;
        }
    }

    /** What the device read back at the end of a run. */
    private record State(float[] pos, float[] vel, float[] potential, float[] kinetic) {}

    /** The smallest number of fcc cells per edge that holds {@code atoms} atoms, and at least 3 so the box exceeds twice the cutoff. */
    static int cellsPerEdge(int atoms) {
        int cells = 3;
        while (4L * cells * cells * cells < atoms) {
            cells++;
        }
        return cells;
    }

    /** Lennard-Jones pair energy {@code 4 (r^-12 - r^-6)} at squared distance {@code rSquared}. */
    private static double pairEnergy(double rSquared) {
        double r6inv = 1 / (rSquared * rSquared * rSquared);
        return 4 * r6inv * (r6inv - 1);
    }

    private static float[] fccLattice(int cells, double latticeConstant) {
        double[][] basis = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
        float[] pos = new float[3 * 4 * cells * cells * cells];
        int atom = 0;
        for (int x = 0; x < cells; x++) {
            for (int y = 0; y < cells; y++) {
                for (int z = 0; z < cells; z++) {
                    for (double[] offset : basis) {
                        pos[3 * atom] = (float) ((x + offset[0]) * latticeConstant);
                        pos[3 * atom + 1] = (float) ((y + offset[1]) * latticeConstant);
                        pos[3 * atom + 2] = (float) ((z + offset[2]) * latticeConstant);
                        atom++;
                    }
                }
            }
        }
        return pos;
    }

    /** Random velocities with zero total momentum, scaled to {@link #TEMPERATURE} (unit mass and Boltzmann constant). */
    private static float[] thermalVelocities(SplittableRandom random, int n) {
        double[] vel = new double[3 * n];
        double[] mean = new double[3];
        for (int i = 0; i < 3 * n; i++) {
            vel[i] = random.nextDouble() - 0.5;
            mean[i % 3] += vel[i] / n;
        }
        double sumSquares = 0;
        for (int i = 0; i < 3 * n; i++) {
            vel[i] -= mean[i % 3];
            sumSquares += vel[i] * vel[i];
        }
        double factor = Math.sqrt(3 * n * TEMPERATURE / sumSquares);
        float[] scaled = new float[3 * n];
        for (int i = 0; i < 3 * n; i++) {
            scaled[i] = (float) (vel[i] * factor);
        }
        return scaled;
    }

    private static double sum(float[] values) {
        double sum = 0;
        for (float value : values) {
            sum += value;
        }
        return sum;
    }

    /** The same simulation in double precision, written as a plain sequential MD loop. */
    private static final class Reference {
        private final int n;
        private final double box;
        private final double cutoffSquared;
        private final double energyShift;
        final double[] pos;
        final double[] vel;
        final double[] force;
        final double[] potential;

        Reference(float[] pos, float[] vel, float box, float cutoffSquared, float energyShift) {
            this.n = pos.length / 3;
            this.box = box;
            this.cutoffSquared = cutoffSquared;
            this.energyShift = energyShift;
            this.pos = Comparison.widened(pos);
            this.vel = Comparison.widened(vel);
            this.force = new double[3 * n];
            this.potential = new double[n];
            computeForces();
        }

        void step(double dt) {
            for (int k = 0; k < 3 * n; k++) {
                vel[k] += 0.5 * dt * force[k];
                pos[k] += dt * vel[k];
                if (pos[k] >= box) {
                    pos[k] -= box;
                } else if (pos[k] < 0) {
                    pos[k] += box;
                }
            }
            computeForces();
            for (int k = 0; k < 3 * n; k++) {
                vel[k] += 0.5 * dt * force[k];
            }
        }

        private void computeForces() {
            Arrays.fill(force, 0);
            Arrays.fill(potential, 0);
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < n; j++) {
                    if (i == j) {
                        continue;
                    }
                    double dx = minimumImage(pos[3 * i] - pos[3 * j]);
                    double dy = minimumImage(pos[3 * i + 1] - pos[3 * j + 1]);
                    double dz = minimumImage(pos[3 * i + 2] - pos[3 * j + 2]);
                    double rSquared = dx * dx + dy * dy + dz * dz;
                    if (rSquared < cutoffSquared) {
                        double r6inv = 1 / (rSquared * rSquared * rSquared);
                        double forceOverR = 24 * r6inv * (2 * r6inv - 1) / rSquared;
                        force[3 * i] += forceOverR * dx;
                        force[3 * i + 1] += forceOverR * dy;
                        force[3 * i + 2] += forceOverR * dz;
                        potential[i] += 0.5 * (pairEnergy(rSquared) - energyShift);
                    }
                }
            }
        }

        private double minimumImage(double d) {
            if (d > box / 2) {
                return d - box;
            }
            if (d < -box / 2) {
                return d + box;
            }
            return d;
        }

        double[] kinetic() {
            double[] kinetic = new double[n];
            for (int i = 0; i < n; i++) {
                kinetic[i] = 0.5
                        * (vel[3 * i] * vel[3 * i] + vel[3 * i + 1] * vel[3 * i + 1] + vel[3 * i + 2] * vel[3 * i + 2]);
            }
            return kinetic;
        }

        double totalEnergy() {
            double total = 0;
            for (int i = 0; i < n; i++) {
                total += potential[i];
            }
            for (double k : kinetic()) {
                total += k;
            }
            return total;
        }

        /** The reference positions, each moved by whole box lengths to the image nearest the device's value. */
        double[] nearestImages(float[] devicePos) {
            double[] images = new double[pos.length];
            for (int k = 0; k < pos.length; k++) {
                images[k] = pos[k] - box * Math.rint((pos[k] - devicePos[k]) / box);
            }
            return images;
        }
    }
}
