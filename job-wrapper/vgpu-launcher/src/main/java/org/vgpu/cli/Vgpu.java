package org.vgpu.cli;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

import org.vgpu.common.BuildInfo;
import org.vgpu.common.cli.LogSettings;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.cli.SubcommandRunner;

/**
 * The {@code vgpu} launcher: {@code vgpu <subcommand> [options]}. Every subcommand runs through
 * {@link SubcommandRunner}, so help, usage errors and failures look and exit the same everywhere:
 * 0 success, 1 the work failed, 2 bad usage.
 *
 * <p>The subcommands are the {@link Subcommand} services on the class path: each module lists its
 * own in {@code META-INF/services/org.vgpu.common.cli.Subcommand}, so the launcher names none of
 * them and depends on no module for its commands' sake. The benchmarks ({@code vgpu bench},
 * {@code remote-bench}, {@code migration-bench}, {@code config-bench}) are offered only where their jar
 * ({@code testbed/benchmarks}) is on the class path, never in the product's {@code vgpu.jar}.
 */
public final class Vgpu {
    private final Map<String, Subcommand> commands = new LinkedHashMap<>();

    /** @throws IllegalStateException when two subcommands share a name: which one runs would be an accident */
    public Vgpu(List<Subcommand> subcommands) {
        for (Subcommand command : subcommands) {
            Subcommand earlier = commands.putIfAbsent(command.name(), command);
            if (earlier != null) {
                throw new IllegalStateException("two vgpu subcommands are named '" + command.name() + "': "
                        + earlier.getClass().getName() + " and "
                        + command.getClass().getName());
            }
        }
    }

    /** The subcommands on this class path, by name. */
    public static Vgpu standard() {
        return new Vgpu(ServiceLoader.load(Subcommand.class).stream()
                .map(ServiceLoader.Provider::get)
                .sorted(Comparator.comparing(Subcommand::name))
                .toList());
    }

    public static void main(String[] args) {
        LogSettings.forCommand(args.length == 0 ? "" : args[0]);
        System.exit(standard().run(args, System.out, System.err));
    }

    public int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h") || args[0].equals("help")) {
            printOverview(args.length == 0 ? err : out);
            return args.length == 0 ? 2 : 0;
        }
        if (args[0].equals("--version")) {
            if (args.length > 1) {
                err.println("vgpu: --version takes nothing, got '"
                        + String.join(" ", Arrays.asList(args).subList(1, args.length)) + "'");
                err.println("see `vgpu --help`");
                return 2;
            }
            out.println(BuildInfo.current().line());
            return 0;
        }
        Subcommand command = commands.get(args[0]);
        if (command == null) {
            err.println("vgpu: unknown command '" + args[0] + "'");
            err.println("see `vgpu --help`");
            return 2;
        }
        return SubcommandRunner.run(command, Arrays.copyOfRange(args, 1, args.length), out, err);
    }

    private void printOverview(PrintStream stream) {
        stream.println("usage: vgpu <command> [options]   (vgpu <command> --help for its options; vgpu --version)");
        stream.println("commands:");
        int width = commands.keySet().stream().mapToInt(String::length).max().orElse(0);
        for (Subcommand command : commands.values()) {
            stream.printf("  %-" + width + "s  %s%n", command.name(), command.summary());
        }
    }
}
