package jcudaprograms;

import java.util.Arrays;

/**
 * How the programs report: their name, whether the result matches the CPU's, and the result's bits hashed (the
 * programs in JCuda's sample packages use it too).
 */
public final class Results {
    private Results() {}

    /** Runs the program's computation as often as its second argument says (default once). */
    public static void repeat(String[] args, Runnable computation) {
        int times = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        for (int i = 0; i < times; i++) {
            computation.run();
        }
    }

    public static void report(String program, float[] result, float[] expected, float tolerance) {
        int wrong = 0;
        for (int i = 0; i < result.length; i++) {
            if (!(Math.abs(result[i] - expected[i]) <= tolerance * Math.max(1.0f, Math.abs(expected[i])))) {
                wrong++;
            }
        }
        System.out.printf(
                "%s: %s, %d values, result hash %08x%n",
                program,
                wrong == 0 ? "PASSED" : "FAILED (" + wrong + " values differ from the CPU's)",
                result.length,
                Arrays.hashCode(result));
    }
}
