package org.vgpu.job;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.List;
import java.util.Optional;

/**
 * Where vgpu's {@code libcuda.so.1} is, for a program that is not Java: the directory put first on the program's
 * {@code LD_LIBRARY_PATH}, so that the program finds it before the node's driver (rcuda-runtime/vgpu-libcuda). It
 * is looked for beside vgpu's own code: in the {@code lib/} directory beside {@code vgpu.jar} (an installation), or
 * where the source tree builds it ({@code rcuda-runtime/vgpu-libcuda/build}, from {@code job-wrapper/target/vgpu.jar}
 * or from a module's {@code target/classes}).
 */
final class LibcudaLocation {
    static final String LIBRARY = "libcuda.so.1";
    static final String LIBRARY_PATH = "LD_LIBRARY_PATH";

    private LibcudaLocation() {}

    /** The directory holding vgpu's library, looked for beside vgpu's code; empty when there is none. */
    static Optional<Path> find() {
        CodeSource code = LibcudaLocation.class.getProtectionDomain().getCodeSource();
        if (code == null || code.getLocation() == null) {
            return Optional.empty();
        }
        try {
            return beside(Path.of(code.getLocation().toURI()));
        } catch (URISyntaxException | IllegalArgumentException e) {
            return Optional.empty(); // not a file: vgpu's code came from elsewhere, and no library is beside it
        }
    }

    /** The directory holding vgpu's library, looked for beside {@code code} (a jar, or a classes directory). */
    static Optional<Path> beside(Path code) {
        Path parent = code.toAbsolutePath().getParent();
        if (parent == null) {
            return Optional.empty();
        }
        return List.of(
                        parent.resolve("lib"),
                        parent.resolve("../../rcuda-runtime/vgpu-libcuda/build"),
                        parent.resolve("../../../rcuda-runtime/vgpu-libcuda/build"))
                .stream()
                .map(Path::normalize)
                .filter(directory -> Files.isRegularFile(directory.resolve(LIBRARY)))
                .findFirst();
    }

    /** {@code LD_LIBRARY_PATH} with {@code directory} first, then what the program had. */
    static String libraryPath(Path directory, Optional<String> programs) {
        return programs.filter(value -> !value.isEmpty())
                .map(value -> directory + ":" + value)
                .orElse(directory.toString());
    }
}
