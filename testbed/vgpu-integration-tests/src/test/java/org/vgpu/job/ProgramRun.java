package org.vgpu.job;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.vgpu.common.cli.SubcommandRunner;

/** One {@code vgpu run [options] -- COMMAND} made in this JVM with an interposer jar of one's own: its status and output. */
record ProgramRun(int status, String out, String err) {
    static ProgramRun of(Map<String, String> environment, Path interposerJar, List<String> args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status;
        try (PrintStream outStream = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream errStream = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            status = SubcommandRunner.run(
                    new RunCommand(environment, duration -> {}, Optional.of(interposerJar)),
                    args.toArray(String[]::new),
                    outStream,
                    errStream);
        }
        return new ProgramRun(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** The program's own lines: what it computed, without vgpu's. */
    List<String> results() {
        return out.lines().filter(line -> !line.startsWith("vgpu")).toList();
    }

    @Override
    public String toString() {
        return "exit " + status + "\n--- out\n" + out + "--- err\n" + err;
    }
}
