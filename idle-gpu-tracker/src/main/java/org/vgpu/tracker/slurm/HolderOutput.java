package org.vgpu.tracker.slurm;

import java.util.Objects;

/**
 * Where holder jobs write their output: sbatch's {@code --output} pattern ({@code %j} the holder's job id), written by
 * slurmd on the node that runs the holder. A holder whose worker cannot start (no Java 25 on the node, a missing
 * launcher) says why only there, so the tracker names that file when it gives an assembly up over a holder that ended.
 *
 * @param pattern sbatch's {@code --output}; {@value #DISCARDED} throws the output away
 */
public record HolderOutput(String pattern) {
    public static final String DISCARDED = "/dev/null";

    public HolderOutput {
        Objects.requireNonNull(pattern, "pattern");
    }

    public boolean discarded() {
        return pattern.equals(DISCARDED);
    }

    /** Where holder {@code holder}, which ran on {@code node}, wrote its output, in words for a log line. */
    public String of(long holder, String node) {
        return discarded()
                ? "its output was discarded (the tracker's --holder-output is " + DISCARDED + ")"
                : "its output is in " + pattern.replace("%j", Long.toString(holder)) + " on " + node;
    }
}
