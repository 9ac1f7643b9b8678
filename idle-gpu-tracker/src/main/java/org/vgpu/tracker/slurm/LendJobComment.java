package org.vgpu.tracker.slurm;

import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Slurm comment of a job the tracker submits into the lend partition, which sacct keeps ({@code
 * AccountingStoreFlags=job_comment}): a holder, {@code vgpu holder: a GPU of NODE lent to job JOB as its vGPU K (user
 * U, account A)}, or a grant holder, {@code vgpu grant: a GPU of NODE granted to job JOB for its vGPU K (...)}. The
 * tracker writes it, and whoever reads a job history ({@code vgpu simulate --sacct}) tells these jobs from users' own
 * by it: one text, made and read here.
 *
 * @param kind a holder (a GPU lent to a job of another node) or a grant holder (a GPU of the job's own node claimed
 *     for a move home)
 * @param node the node whose GPU the job keeps
 * @param job the vgpu job the GPU serves
 * @param vgpu which vGPU of that job
 * @param owner who is charged, e.g. {@code user nobody, account physics}
 */
public record LendJobComment(Kind kind, String node, long job, int vgpu, String owner) {
    /** What the lend job keeps its GPU for. */
    public enum Kind {
        HOLDER("vgpu holder: ", "lent to", "as"),
        GRANT("vgpu grant: ", "granted to", "for");

        private final String prefix;
        private final String given;
        private final String role;

        Kind(String prefix, String given, String role) {
            this.prefix = prefix;
            this.given = given;
            this.role = role;
        }
    }

    /** What {@link #parse} expects, for error messages. */
    public static final String FORMAT = "'vgpu holder: a GPU of NODE lent to job JOB as its vGPU K (OWNER)' or"
            + " 'vgpu grant: a GPU of NODE granted to job JOB for its vGPU K (OWNER)'";

    private static final Pattern TEXT = Pattern.compile(
            "a GPU of (\\S+) (lent to|granted to) job ([0-9]{1,18}) (as|for) its vGPU ([0-9]{1,9}) \\((.*)\\)");

    public LendJobComment {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(owner, "owner");
        if (node.isBlank() || job < 1 || vgpu < 0) {
            throw new IllegalArgumentException("a lend job's comment needs a node, a job >= 1 and a vGPU >= 0, got "
                    + node + ", " + job + ", " + vgpu);
        }
    }

    /** The comment Slurm gets. */
    public String text() {
        return kind.prefix + "a GPU of " + node + " " + kind.given + " job " + job + " " + kind.role + " its vGPU "
                + vgpu + " (" + owner + ")";
    }

    /** Whether {@code comment} begins as the tracker's lend jobs' comments do, well formed or not. */
    public static boolean looksLikeOne(String comment) {
        return kindOf(comment).isPresent();
    }

    /**
     * The lend job's comment {@code comment} is, or empty when it is not one ({@link #looksLikeOne} false).
     *
     * @throws IllegalArgumentException when it begins as one but is not well formed
     */
    public static Optional<LendJobComment> parse(String comment) {
        Optional<Kind> kind = kindOf(comment);
        if (kind.isEmpty()) {
            return Optional.empty();
        }
        Matcher matcher =
                TEXT.matcher(comment.strip().substring(kind.get().prefix.length()));
        if (!matcher.matches()
                || !matcher.group(2).equals(kind.get().given)
                || !matcher.group(4).equals(kind.get().role)
                || Long.parseLong(matcher.group(3)) < 1) {
            throw new IllegalArgumentException("'" + comment + "' is no lend job's comment; expected " + FORMAT);
        }
        return Optional.of(new LendJobComment(
                kind.get(),
                matcher.group(1),
                Long.parseLong(matcher.group(3)),
                Integer.parseInt(matcher.group(5)),
                matcher.group(6)));
    }

    private static Optional<Kind> kindOf(String comment) {
        String stripped = comment.strip();
        for (Kind kind : Kind.values()) {
            if (stripped.startsWith(kind.prefix)) {
                return Optional.of(kind);
            }
        }
        return Optional.empty();
    }
}
