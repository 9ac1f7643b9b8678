package org.vgpu.runtime.cli;

import java.io.PrintStream;
import java.util.List;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;

/** {@code vgpu devices}: every backend this machine offers and its devices; emulation is labelled. */
public final class DevicesCommand implements Subcommand {
    private static final List<String> BACKENDS = List.of("native", EmulatedBackend.NAME);

    @Override
    public String name() {
        return "devices";
    }

    @Override
    public String summary() {
        return "list the backends and devices of this machine (emulated devices are labelled)";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("backend")
                        .hasArg()
                        .argName("NAME")
                        .desc("native, emulated or all (default all)")
                        .get());
    }

    /** Exit 1 only when an asked-for backend is unusable; a machine without GPU is no failure of "all". */
    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        String backend = CommandLines.choice(line, "backend", "all", List.of("all", "native", EmulatedBackend.NAME));
        List<String> names = backend.equals("all") ? BACKENDS : List.of(backend);
        int failures = 0;
        for (String name : names) {
            try (GpuBackend opened = Backends.open(name)) {
                int count = opened.deviceCount();
                out.printf(
                        "backend %s: %d device%s%s%n",
                        name, count, count == 1 ? "" : "s", opened.isEmulation() ? " [CPU EMULATION, not a GPU]" : "");
                for (int d = 0; d < count; d++) {
                    out.printf(
                            "  %s %d: %s%n", name, d, opened.deviceProperties(d).describe());
                }
            } catch (VgpuException e) {
                out.printf("backend %s: unavailable (%s)%n", name, e.getMessage());
                if (e.code() != ErrorCode.VGPU_BACKEND_UNAVAILABLE || names.size() == 1) {
                    failures++;
                }
            }
        }
        return failures == 0 ? 0 : 1;
    }
}
