package org.vgpu.cli;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.vgpu.job.RunCommand;
import org.vgpu.migration.cli.MigrateCommand;
import org.vgpu.migration.cli.MigrationBenchCommand;
import org.vgpu.runtime.cli.BenchCommand;
import org.vgpu.runtime.cli.DemoCommand;
import org.vgpu.runtime.cli.DevicesCommand;
import org.vgpu.runtime.cli.LenderCommand;
import org.vgpu.runtime.cli.RemoteBenchCommand;
import org.vgpu.runtime.remote.worker.WorkerCommand;
import org.vgpu.siteconfig.cli.ConfigCommand;
import org.vgpu.tracker.cli.ReportCommand;
import org.vgpu.tracker.cli.TrackerCommand;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.cli.SubcommandRunner;

/**
 * The {@code vgpu} launcher: {@code vgpu <subcommand> [options]}. Every subcommand runs through
 * {@link SubcommandRunner}, so help, usage errors and failures look and exit the same everywhere:
 * 0 success, 1 the work failed, 2 bad usage.
 */
public final class Vgpu {
    private final Map<String, Subcommand> commands = new LinkedHashMap<>();

    public Vgpu(List<Subcommand> subcommands) {
        for (Subcommand command : subcommands) {
            commands.put(command.name(), command);
        }
    }

    /** The subcommands a {@code vgpu} installation offers. */
    public static Vgpu standard() {
        return new Vgpu(List.of(new DevicesCommand(), new DemoCommand(), new BenchCommand(), new LenderCommand(),
                new WorkerCommand(), new RemoteBenchCommand(), new RunCommand(), new MigrateCommand(), new MigrationBenchCommand(),
                new ConfigCommand(), new TrackerCommand(), new ReportCommand()));
    }

    public static void main(String[] args) {
        System.exit(standard().run(args, System.out, System.err));
    }

    public int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h") || args[0].equals("help")) {
            printOverview(args.length == 0 ? err : out);
            return args.length == 0 ? 2 : 0;
        }
        Subcommand command = commands.get(args[0]);
        if (command == null) {
            err.println("vgpu: unknown command '" + args[0] + "'");
            printOverview(err);
            return 2;
        }
        return SubcommandRunner.run(command, Arrays.copyOfRange(args, 1, args.length), out, err);
    }

    private void printOverview(PrintStream stream) {
        stream.println("usage: vgpu <command> [options]   (vgpu <command> --help for its options)");
        stream.println("commands:");
        int width = commands.keySet().stream().mapToInt(String::length).max().orElse(0);
        for (Subcommand command : commands.values()) {
            stream.printf("  %-" + width + "s  %s%n", command.name(), command.summary());
        }
    }
}
