package org.vgpu.runtime.workloads;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;

import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * Smith-Waterman local alignment of two DNA sequences with a linear gap penalty: the whole scoring
 * matrix is filled by one launch per anti-diagonal, each depending on the two before it, so this is
 * a long chain of small dependent launches. Integer arithmetic: matrix and best score are exact.
 * The second sequence is a mutated copy of part of the first, so there is a real alignment to find.
 */
public final class SmithWatermanWorkload implements Workload {
    static final int DEFAULT_LENGTH_A = 256;
    static final int DEFAULT_LENGTH_B = 200;
    static final int MATCH = 3;
    static final int MISMATCH = -3;
    static final int GAP = 2;
    private static final byte[] BASES = "ACGT".getBytes(StandardCharsets.US_ASCII);

    @Override
    public String name() {
        return "smith-waterman";
    }

    @Override
    public String description() {
        return "Smith-Waterman, 256 x 200 bases per scale unit, one launch per anti-diagonal; matrix and best score exact";
    }

    @Override
    public WorkloadResult run(VirtualGpu gpu, int scale, long seed) {
        int lenA = Workload.scaled(DEFAULT_LENGTH_A, scale);
        int lenB = Workload.scaled(DEFAULT_LENGTH_B, scale);
        int cells = Math.multiplyExact(lenA + 1, lenB + 1);
        SplittableRandom random = new SplittableRandom(seed);
        byte[] seqA = randomBases(random, lenA);
        byte[] seqB = mutatedCopy(random, seqA, lenB);

        var run = DeviceScope.run(gpu, device -> {
            long da = device.upload(seqA);
            long db = device.upload(seqB);
            long dh = device.allocateZeroed((long) cells * Integer.BYTES);
            for (int diag = 2; diag <= lenA + lenB; diag++) {
                int diagonalCells = Math.min(lenA, diag - 1) - Math.max(1, diag - lenB) + 1;
                device.launch1D(
                        TestKernels.SW_ANTI_DIAGONAL,
                        diagonalCells,
                        KernelArgs.builder()
                                .pointer(da)
                                .pointer(db)
                                .pointer(dh)
                                .i32(lenA)
                                .i32(lenB)
                                .i32(diag)
                                .i32(MATCH)
                                .i32(MISMATCH)
                                .i32(GAP)
                                .build());
            }
            return device.readInts(dh, cells);
        });

        int[] expected = scoreMatrix(seqA, seqB);
        int expectedBest = max(expected);
        int best = max(run.output());
        Comparison comparison = Comparison.exact("best score", new int[] {expectedBest}, new int[] {best})
                .and(Comparison.exact("H", expected, run.output()));
        return new WorkloadResult(
                name(),
                gpu.backendName(),
                comparison,
                run.elapsed(),
                String.format("%d x %d bases, best local score %d, %d launches", lenA, lenB, best, run.launches()));
    }

    /** The reference: the textbook row-by-row dynamic program. */
    private static int[] scoreMatrix(byte[] seqA, byte[] seqB) {
        int width = seqB.length + 1;
        int[] h = new int[(seqA.length + 1) * width];
        for (int i = 1; i <= seqA.length; i++) {
            for (int j = 1; j <= seqB.length; j++) {
                int diagonal = h[(i - 1) * width + j - 1] + (seqA[i - 1] == seqB[j - 1] ? MATCH : MISMATCH);
                int up = h[(i - 1) * width + j] - GAP;
                int left = h[i * width + j - 1] - GAP;
                h[i * width + j] = Math.max(0, Math.max(diagonal, Math.max(up, left)));
            }
        }
        return h;
    }

    private static int max(int[] values) {
        int max = Integer.MIN_VALUE;
        for (int value : values) {
            max = Math.max(max, value);
        }
        return max;
    }

    private static byte[] randomBases(SplittableRandom random, int length) {
        byte[] bases = new byte[length];
        for (int i = 0; i < length; i++) {
            bases[i] = BASES[random.nextInt(BASES.length)];
        }
        return bases;
    }

    /**
     * {@code length} bases copied from a random offset of {@code source} with about 10 %
     * substitutions, 3 % deletions and 3 % insertions; random bases once the source runs out.
     */
    private static byte[] mutatedCopy(SplittableRandom random, byte[] source, int length) {
        byte[] copy = new byte[length];
        int from = random.nextInt(Math.max(1, source.length - length + 1));
        for (int i = 0; i < length; i++) {
            double roll = random.nextDouble();
            if (roll < 0.03) {
                from++;
            } else if (roll < 0.06) {
                copy[i] = BASES[random.nextInt(BASES.length)];
                continue;
            }
            boolean substitute = from >= source.length || random.nextDouble() < 0.10;
            copy[i] = substitute ? BASES[random.nextInt(BASES.length)] : source[from];
            from++;
        }
        return copy;
    }
}
