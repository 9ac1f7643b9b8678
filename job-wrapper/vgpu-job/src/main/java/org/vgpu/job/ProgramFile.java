package org.vgpu.job;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Whether the command {@code vgpu run} is to start can start, said as shells say it: a program that is not there is
 * named as missing (status 127), one that is a directory or not executable as such (126). Checked before anything is
 * opened for it, so the user reads one line about their program, not an I/O error of the launcher's.
 */
final class ProgramFile {
    /** The shells' status for a command that is not found. */
    static final int NOT_FOUND = 127;
    /** The shells' status for a command that is found but cannot run. */
    static final int CANNOT_RUN = 126;

    /** Why a program cannot start, and the status to exit with. */
    record Refusal(String reason, int status) {}

    private ProgramFile() {}

    /**
     * Why {@code program} cannot start, or empty when it can; a name without a slash is looked up on {@code PATH} (the
     * job's, else the launcher's), as the program is started.
     */
    static Optional<Refusal> refusal(String program, Map<String, String> environment) {
        if (program.isEmpty()) {
            return Optional.of(new Refusal("an empty program name", NOT_FOUND));
        }
        if (program.contains("/")) {
            return refusal(program, Path.of(program));
        }
        String searched = environment.getOrDefault("PATH", Objects.requireNonNullElse(System.getenv("PATH"), ""));
        Optional<Refusal> firstFound = Optional.empty();
        for (String directory : searched.split(File.pathSeparator, -1)) {
            Path candidate = Path.of(directory.isEmpty() ? "." : directory).resolve(program);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return Optional.empty();
            }
            if (firstFound.isEmpty() && Files.exists(candidate)) {
                firstFound = refusal(program, candidate);
            }
        }
        return firstFound.or(
                () -> Optional.of(new Refusal(program + ": command not found (PATH " + searched + ")", NOT_FOUND)));
    }

    private static Optional<Refusal> refusal(String program, Path file) {
        if (!Files.exists(file)) {
            return Optional.of(new Refusal(program + ": no such program", NOT_FOUND));
        }
        if (Files.isDirectory(file)) {
            return Optional.of(new Refusal(program + ": is a directory, not a program", CANNOT_RUN));
        }
        if (!Files.isExecutable(file)) {
            return Optional.of(new Refusal(
                    program + ": not executable (chmod +x it, or run it through its interpreter: sh " + program + ")",
                    CANNOT_RUN));
        }
        return Optional.empty();
    }
}
