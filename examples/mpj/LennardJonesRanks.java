import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.IntPredicate;

import mpi.MPI;

import org.vgpu.api.VirtualGpus;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * Lennard-Jones molecular dynamics (LAMMPS's "melt": 108 atoms on an fcc lattice at density 0.8442, temperature 3.0,
 * cutoff 2.5, velocity Verlet with dt 0.005) as MPJ Express ranks, each rank on a vGPU of its own. Rank r owns a share
 * of the atoms: in every step it integrates its atoms and computes their forces (against all atoms) on its GPU, and the
 * ranks combine their new positions with Allreduce; at the end they combine velocities and energies the same way.
 * Rank 0 then computes the same steps as a single rank, the shares one after another on its own vGPU, and checks that
 * positions, velocities and energies are equal bit for bit (the same kernels on the same numbers in the same order).
 * With SECONDS, the ranks go on past STEPS in blocks of 100 steps until rank 0 has run that long (a run to watch a
 * migration in); they agree on when to stop with another Allreduce.
 *
 * <pre>
 * javac -cp /usr/share/java/mpj.jar:vgpu.jar LennardJonesRanks.java
 * vgpu run --ranks 3 -- java -cp .:vgpu.jar LennardJonesRanks [STEPS [SECONDS]]
 * </pre>
 */
public class LennardJonesRanks {
    static final int CELLS = 3;
    static final double DENSITY = 0.8442;
    static final double TEMPERATURE = 3.0;
    static final float DT = 0.005f;
    static final float CUTOFF_SQUARED = 2.5f * 2.5f;
    static final float ENERGY_SHIFT = (float) pairEnergy(CUTOFF_SQUARED);

    /** How the shares' slices of an array (zero elsewhere) become the whole array. */
    interface Combine {
        float[] all(float[] slices);
    }

    public static void main(String[] args) throws Exception {
        String[] own = MPI.Init(args);
        int rank = MPI.COMM_WORLD.Rank();
        int size = MPI.COMM_WORLD.Size();
        int steps = own.length > 0 ? Integer.parseInt(own[0]) : 200;
        long deadline = System.nanoTime() + (long) ((own.length > 1 ? Double.parseDouble(own[1]) : 0) * 1e9);
        VirtualGpus gpus = VirtualGpus.fromEnvironment();
        VirtualGpu gpu = gpus.forRank(rank, size);
        System.out.println("rank " + rank + " of " + size + " on vGPU " + rank + " (" + gpu.deviceProperties().name()
                + ")");
        Atoms start = Atoms.melt();
        Combine allreduce = slices -> {
            float[] all = new float[slices.length];
            MPI.COMM_WORLD.Allreduce(slices, 0, all, 0, slices.length, MPI.FLOAT, MPI.SUM);
            return all;
        };
        IntPredicate more = done -> {
            if (done < steps || (done - steps) % 100 != 0) {
                return true; // STEPS first, then whole blocks of 100
            }
            int[] goOn = {rank == 0 && System.nanoTime() < deadline ? 1 : 0};
            int[] anyGoesOn = new int[1];
            MPI.COMM_WORLD.Allreduce(goOn, 0, anyGoesOn, 0, 1, MPI.INT, MPI.MAX);
            return anyGoesOn[0] == 1;
        };
        Run ranks = simulate(List.of(new Share(gpu, start.count(), rank, size)), start, more, allreduce);
        if (rank == 0) {
            System.out.printf(
                    "%d ranks, %d atoms, %d steps: energy/atom %.6f%n",
                    size, start.count(), ranks.steps(), ranks.atoms().energyPerAtom());
            List<Share> alone = new ArrayList<>();
            for (int share = 0; share < size; share++) {
                alone.add(new Share(gpu, start.count(), share, size));
            }
            Atoms single = simulate(alone, start, done -> done < ranks.steps(), slices -> slices)
                    .atoms();
            Atoms distributed = ranks.atoms();
            boolean same = Arrays.equals(distributed.pos, single.pos)
                    && Arrays.equals(distributed.vel, single.vel)
                    && Arrays.equals(distributed.potential, single.potential)
                    && Arrays.equals(distributed.kinetic, single.kinetic);
            if (!same) {
                throw new IllegalStateException(size + " ranks differ from a single rank: energy/atom "
                        + distributed.energyPerAtom() + " against " + single.energyPerAtom());
            }
            System.out.println("MATCH: " + size + " ranks on " + size + " vGPUs equal a single rank on vGPU 0, bit for"
                    + " bit (positions, velocities, energies)");
        }
        MPI.Finalize();
    }

    /** The atoms after a run, and how many steps it took. */
    record Run(Atoms atoms, int steps) {}

    /**
     * Velocity Verlet, a step while {@code more} says so of the steps done: each share integrates its atoms and
     * computes their forces; {@code combine} joins the shares.
     */
    static Run simulate(List<Share> shares, Atoms start, IntPredicate more, Combine combine) {
        for (Share share : shares) {
            share.begin(start);
            share.push(start.pos);
        }
        int done = 0;
        for (; more.test(done); done++) {
            float[] moved = new float[start.pos.length];
            for (Share share : shares) {
                share.move(moved);
            }
            float[] pos = combine.all(moved);
            for (Share share : shares) {
                share.push(pos);
                share.kick();
            }
        }
        float[] vel = new float[start.vel.length];
        float[] potential = new float[start.count()];
        float[] kinetic = new float[start.count()];
        float[] pos = new float[start.pos.length];
        for (Share share : shares) {
            share.finish(pos, vel, potential, kinetic);
        }
        return new Run(
                new Atoms(start.box, combine.all(pos), combine.all(vel), combine.all(potential), combine.all(kinetic)),
                done);
    }

    /**
     * One share of the atoms, [first, first + count), on one GPU. The GPU holds all positions, rotated so that the
     * share's atoms come first: the kernels then work on atoms 0 to count - 1, and ljForces sums over all atoms.
     */
    static final class Share {
        private final VirtualGpu gpu;
        private final int atoms;
        private final int first;
        private final int count;
        private final FunctionHandle initialIntegrate;
        private final FunctionHandle applyPeriodic;
        private final FunctionHandle forces;
        private final FunctionHandle finalIntegrate;
        private final FunctionHandle kineticEnergy;
        private final long pos;
        private final long vel;
        private final long force;
        private final long potential;
        private final long kinetic;
        private float box;

        Share(VirtualGpu gpu, int atoms, int index, int shares) {
            this.gpu = gpu;
            this.atoms = atoms;
            this.first = atoms * index / shares;
            this.count = atoms * (index + 1) / shares - first;
            ModuleHandle module = gpu.moduleLoadData(TestKernels.ptx());
            initialIntegrate = gpu.moduleGetFunction(module, TestKernels.LJ_INITIAL_INTEGRATE);
            applyPeriodic = gpu.moduleGetFunction(module, TestKernels.LJ_APPLY_PERIODIC);
            forces = gpu.moduleGetFunction(module, TestKernels.LJ_FORCES);
            finalIntegrate = gpu.moduleGetFunction(module, TestKernels.LJ_FINAL_INTEGRATE);
            kineticEnergy = gpu.moduleGetFunction(module, TestKernels.LJ_KINETIC_ENERGY);
            pos = gpu.memAlloc(3L * atoms * Float.BYTES);
            vel = gpu.memAlloc(3L * count * Float.BYTES);
            force = gpu.memAlloc(3L * atoms * Float.BYTES);
            potential = gpu.memAlloc((long) atoms * Float.BYTES);
            kinetic = gpu.memAlloc((long) count * Float.BYTES);
        }

        void begin(Atoms start) {
            box = start.box;
            float[] own = Arrays.copyOfRange(start.vel, 3 * first, 3 * (first + count));
            gpu.memcpyHtoD(vel, MemorySegment.ofArray(own), (long) own.length * Float.BYTES);
        }

        /** First half of a step for the share's atoms; their new positions go into {@code moved}. */
        void move(float[] moved) {
            launch(
                    initialIntegrate,
                    KernelArgs.builder()
                            .pointer(pos)
                            .pointer(vel)
                            .pointer(force)
                            .i32(count)
                            .f32(0.5f * DT)
                            .f32(DT)
                            .build());
            launch(applyPeriodic, KernelArgs.builder().pointer(pos).i32(count).f32(box).build());
            read(pos, moved, 3 * first, 3 * count);
        }

        /** All atoms' positions in, the share's forces (and potential energies) out. */
        void push(float[] all) {
            float[] rotated = new float[all.length];
            System.arraycopy(all, 3 * first, rotated, 0, all.length - 3 * first);
            System.arraycopy(all, 0, rotated, all.length - 3 * first, 3 * first);
            gpu.memcpyHtoD(pos, MemorySegment.ofArray(rotated), (long) rotated.length * Float.BYTES);
            launch(
                    forces,
                    KernelArgs.builder()
                            .pointer(pos)
                            .pointer(force)
                            .pointer(potential)
                            .i32(atoms)
                            .f32(box)
                            .f32(CUTOFF_SQUARED)
                            .f32(ENERGY_SHIFT)
                            .build());
        }

        /** Second half of a step: the share's velocities from its new forces. */
        void kick() {
            launch(
                    finalIntegrate,
                    KernelArgs.builder()
                            .pointer(vel)
                            .pointer(force)
                            .i32(count)
                            .f32(0.5f * DT)
                            .build());
        }

        /** The share's slices of the results, each at its atoms' place in the arrays of all atoms. */
        void finish(float[] allPos, float[] allVel, float[] allPotential, float[] allKinetic) {
            launch(kineticEnergy, KernelArgs.builder().pointer(vel).pointer(kinetic).i32(count).build());
            read(pos, allPos, 3 * first, 3 * count);
            read(vel, allVel, 3 * first, 3 * count);
            read(potential, allPotential, first, count);
            read(kinetic, allKinetic, first, count);
        }

        /** One thread for each of the share's atoms (ljForces reads all atoms, writes the share's). */
        private void launch(FunctionHandle function, KernelArgs args) {
            int block = Math.min(count, 128);
            gpu.launchKernel(
                    function, Dim3.of((count + block - 1) / block), Dim3.of(block), 0, StreamHandle.DEFAULT, args);
        }

        private void read(long from, float[] into, int at, int floats) {
            float[] part = new float[floats];
            gpu.memcpyDtoH(MemorySegment.ofArray(part), from, (long) floats * Float.BYTES);
            System.arraycopy(part, 0, into, at, floats);
        }
    }

    /** Atoms: the box edge, positions and velocities (3 floats each), per-atom potential and kinetic energies. */
    record Atoms(float box, float[] pos, float[] vel, float[] potential, float[] kinetic) {
        int count() {
            return pos.length / 3;
        }

        double energyPerAtom() {
            double total = 0;
            for (int i = 0; i < count(); i++) {
                total += potential[i] + kinetic[i];
            }
            return total / count();
        }

        /** An fcc lattice of CELLS^3 cells, velocities at TEMPERATURE with no net momentum (seed 1). */
        static Atoms melt() {
            double lattice = Math.cbrt(4 / DENSITY);
            int n = 4 * CELLS * CELLS * CELLS;
            double[][] basis = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
            float[] pos = new float[3 * n];
            int atom = 0;
            for (int x = 0; x < CELLS; x++) {
                for (int y = 0; y < CELLS; y++) {
                    for (int z = 0; z < CELLS; z++) {
                        for (double[] offset : basis) {
                            pos[3 * atom] = (float) ((x + offset[0]) * lattice);
                            pos[3 * atom + 1] = (float) ((y + offset[1]) * lattice);
                            pos[3 * atom + 2] = (float) ((z + offset[2]) * lattice);
                            atom++;
                        }
                    }
                }
            }
            SplittableRandom random = new SplittableRandom(1);
            double[] v = new double[3 * n];
            double[] mean = new double[3];
            for (int k = 0; k < 3 * n; k++) {
                v[k] = random.nextDouble() - 0.5;
                mean[k % 3] += v[k] / n;
            }
            double squares = 0;
            for (int k = 0; k < 3 * n; k++) {
                v[k] -= mean[k % 3];
                squares += v[k] * v[k];
            }
            double scale = Math.sqrt(3 * n * TEMPERATURE / squares);
            float[] vel = new float[3 * n];
            for (int k = 0; k < 3 * n; k++) {
                vel[k] = (float) (v[k] * scale);
            }
            return new Atoms((float) (CELLS * lattice), pos, vel, null, null);
        }
    }

    static double pairEnergy(double rSquared) {
        double r6inv = 1 / (rSquared * rSquared * rSquared);
        return 4 * r6inv * (r6inv - 1);
    }
}
