package org.vgpu.cli;

import java.io.PrintStream;

/**
 * One subcommand of the {@code vgpu} launcher. Output goes to the injected streams so tests can
 * read it; the exit status is returned, never passed to {@code System.exit} here.
 */
public interface Subcommand {

    /** The word after {@code vgpu}, e.g. "devices". */
    String name();

    /** One line for {@code vgpu --help}. */
    String summary();

    /**
     * Runs with the arguments that follow the subcommand's name.
     *
     * @return 0 on success, 1 when the work failed (e.g. a result mismatch), 2 for bad usage
     */
    int run(String[] args, PrintStream out, PrintStream err);
}
