package org.vgpu.common.cli;

import java.io.PrintStream;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

/**
 * One subcommand of the {@code vgpu} launcher. The launcher parses the options, answers
 * {@code --help}, and turns a {@link ParseException} into a usage error (status 2) and a
 * {@link org.vgpu.common.error.VgpuFailure} into its message (status 1), so every command
 * reports bad input the same way. Output goes to the injected streams so tests can read it.
 */
public interface Subcommand {

    /** The word after {@code vgpu}, e.g. "devices". */
    String name();

    /** One line for {@code vgpu --help}. */
    String summary();

    /** The options this command accepts; {@code --help} is added by the launcher. */
    Options options();

    /**
     * The operands (words that are not options) this command takes, as usage shows them, e.g.
     * {@code "check|render FILE"}; empty for a command that takes none, whose stray words are then
     * a usage error. A command with operands reads them from {@link CommandLine#getArgList()}.
     */
    default String operands() {
        return "";
    }

    /**
     * Runs with the parsed options.
     *
     * @return 0 on success, 1 when the work failed (e.g. a result mismatch)
     * @throws ParseException for option values that parse but make no sense (reported as usage)
     */
    int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException;
}
