package org.vgpu.simulator.report;

import java.io.Console;
import java.io.PrintStream;
import java.util.Locale;
import java.util.Optional;
import java.util.function.DoubleConsumer;

/**
 * How far a policy's run has come, on standard error: on a terminal one line redrawn in place ({@code \r}) at
 * every whole percent; elsewhere (a log, a pipe) one line at each quarter, so a log is not flooded. It takes the
 * fraction done, 0 to 1, as the simulator reports it.
 */
public final class ProgressBar implements DoubleConsumer {
    private static final int WIDTH = 30;
    private static final int QUARTER = 25;

    private final PrintStream err;
    private final String label;
    private final boolean terminal;
    private int shown = -1;

    public ProgressBar(PrintStream err, String label, boolean terminal) {
        this.err = err;
        this.label = label;
        this.terminal = terminal;
    }

    /** Whether standard error is likely a terminal: the JVM's console is a terminal. */
    public static boolean stderrIsTerminal() {
        // System.console() is null where the JVM has no console support (e.g. a forked test JVM), whatever the
        // JDK's documentation says of JDK 22 and newer.
        return Optional.ofNullable(System.console()).map(Console::isTerminal).orElse(false);
    }

    @Override
    public void accept(double fraction) {
        int percent = (int) Math.floor(Math.clamp(fraction, 0, 1) * 100);
        if (terminal) {
            if (percent != shown) {
                int filled = percent * WIDTH / 100;
                err.print(String.format(
                        Locale.ROOT,
                        "\r%s [%s%s] %3d %%",
                        label,
                        "#".repeat(filled),
                        "-".repeat(WIDTH - filled),
                        percent));
                err.flush();
                shown = percent;
            }
        } else if (percent / QUARTER > shown / QUARTER || shown < 0) {
            shown = percent / QUARTER * QUARTER;
            err.println(String.format(Locale.ROOT, "%s: %d %%", label, shown));
        }
    }

    /** Ends the bar: the terminal's line is closed, a log gets its 100 % if it has not had it. */
    public void finish() {
        accept(1);
        if (terminal) {
            err.println();
        }
    }
}
