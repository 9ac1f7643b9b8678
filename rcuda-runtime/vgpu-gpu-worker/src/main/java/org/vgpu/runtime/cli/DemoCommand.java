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
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.workloads.Workload;
import org.vgpu.runtime.workloads.WorkloadCheck;
import org.vgpu.runtime.workloads.Workloads;

/**
 * {@code vgpu demo}: runs the test workloads on one vGPU and checks each against its CPU reference.
 * One line per workload with PASS or FAIL, the error against the reference and the time, then a
 * summary; exit 0 when all passed, 1 when any failed. On the CPU emulation every line says so.
 */
public final class DemoCommand implements Subcommand {
    @Override
    public String name() {
        return "demo";
    }

    @Override
    public String summary() {
        return "run the test workloads on a vGPU and check every result against a CPU reference";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("backend")
                        .hasArg()
                        .argName("NAME")
                        .desc("auto, native or emulated (default auto: native when this machine has a GPU)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("size")
                        .hasArg()
                        .argName("N")
                        .desc("problem-size multiplier, >= 1 (default 1, sized for the CPU emulation)")
                        .get())
                .addOption(WorkloadSelection.option("all"))
                .addOption(Option.builder()
                        .longOpt("vgpu")
                        .hasArg()
                        .argName("K")
                        .desc("vGPU index, which fixes the address window (default 0)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("device")
                        .hasArg()
                        .argName("D")
                        .desc("device of the backend to open the vGPU on (default 0)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("seed")
                        .hasArg()
                        .argName("S")
                        .desc("seed of the random inputs (default 1)")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        String backendName = CommandLines.choice(line, "backend", Backends.AUTO, Backends.CHOICES);
        int scale = CommandLines.intValue(line, "size", 1, 1);
        int vgpuIndex = CommandLines.intValue(line, "vgpu", 0, 0);
        if (vgpuIndex >= VaWindow.MAX_VGPUS) {
            throw new ParseException("--vgpu must be < " + VaWindow.MAX_VGPUS + ", got " + vgpuIndex);
        }
        int device = CommandLines.intValue(line, "device", 0, 0);
        int seed = CommandLines.intValue(line, "seed", 1, 0);
        List<Workload> workloads =
                WorkloadSelection.select(line.getOptionValues(WorkloadSelection.OPTION), Workloads.all());

        try (GpuBackend backend = Backends.open(backendName)) {
            if (device >= backend.deviceCount()) {
                throw new ParseException("--device " + device + " does not exist: backend " + backend.name() + " has "
                        + backend.deviceCount() + " device(s)");
            }
            String emulationMark = backend.isEmulation() ? "  [CPU EMULATION, not a GPU]" : "";
            out.printf(
                    "backend %s, device %d: %s%n",
                    backend.name(), device, backend.deviceProperties(device).describe());
            if (backend.isEmulation()) {
                out.println("CPU EMULATION, not a GPU: kernels run as their Java twins; results check the runtime,"
                        + " times say nothing about GPUs");
            }
            int failed = 0;
            try (VirtualGpu gpu = backend.open(device, VaWindow.forVgpu(vgpuIndex))) {
                out.printf("%s, size x%d, seed %d%n", gpu.window(), scale, seed);
                for (Workload workload : workloads) {
                    WorkloadCheck check = WorkloadCheck.run(workload, gpu, scale, seed);
                    out.println(check.line("") + emulationMark);
                    if (!check.passed()) {
                        failed++;
                    }
                }
            }
            out.printf(
                    "%s: %d of %d workloads passed on %s%s%n",
                    failed == 0 ? "PASS" : "FAIL",
                    workloads.size() - failed,
                    workloads.size(),
                    backend.name(),
                    emulationMark);
            return failed == 0 ? 0 : 1;
        }
    }
}
