package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Java of a command that names a {@code java} binary, over Java homes made here: a release file, or none. */
class ProgramJavaTest {
    @TempDir
    Path directory;

    @Test
    void theInterposerNeedsTheJavaItIsCompiledFor() {
        assertEquals(25, ProgramJava.NEEDED);
    }

    @Test
    void aVersionNamesItsRelease() {
        assertEquals(17, PremainJavaCheck.release("17"));
        assertEquals(8, PremainJavaCheck.release("1.8"));
        assertEquals(OptionalInt.of(17), ProgramJava.feature("17.0.15"));
        assertEquals(OptionalInt.of(8), ProgramJava.feature("1.8.0_392"));
        assertEquals(OptionalInt.of(25), ProgramJava.feature("25"));
        assertEquals(OptionalInt.of(25), ProgramJava.feature("25-ea"));
        assertEquals(OptionalInt.of(21), ProgramJava.feature("21.0.2+13-LTS"));
        assertEquals(OptionalInt.empty(), ProgramJava.feature("unknown"));
    }

    @Test
    void anOlderJavaNamedByPathIsRefusedInOneLineSayingWhichJavaAndWhatToDo() throws IOException {
        Path java = javaHome("jdk-21", Optional.of("JAVA_VERSION=\"21.0.2\"\n"), "");

        Optional<String> refusal = ProgramJava.refusal(List.of(java.toString(), "-cp", "app.jar", "Main"), Map.of());

        assertTrue(refusal.isPresent());
        assertEquals(1, refusal.get().lines().count(), refusal.get());
        assertTrue(
                refusal.get()
                        .startsWith("vgpu run: the program's java (" + java + ") is Java 21.0.2; the vgpu"
                                + " interposer needs Java 25 or later in the program's JVM: start the program with a Java 25's"
                                + " java, for example vgpu run -- "),
                refusal.get());
    }

    @Test
    void javaOnThePathIsFoundThere() throws IOException {
        Path java = javaHome("jdk-17", Optional.of("IMPLEMENTOR=\"x\"\nJAVA_VERSION=\"17.0.15\"\n"), "");

        Optional<String> refusal =
                ProgramJava.refusal(List.of("java", "Main"), Map.of("PATH", "/nowhere:" + java.getParent()));

        assertTrue(refusal.orElseThrow().contains("is Java 17.0.15"), refusal.get());
    }

    @Test
    void aHomeWithoutAReleaseFileIsAskedOnce() throws IOException {
        Path java = javaHome("jre-11", Optional.empty(), "echo 'openjdk version \"11.0.22\" 2024-01-16' >&2");

        assertEquals(Optional.of("11.0.22"), ProgramJava.version(java));
        assertTrue(ProgramJava.refusal(List.of(java.toString()), Map.of())
                .orElseThrow()
                .contains("Java 11.0.22"));
    }

    @Test
    void aNewEnoughJavaOrACommandThatIsNoJavaBinaryIsLeftToRun() throws IOException {
        Path java = javaHome("jdk-25", Optional.of("JAVA_VERSION=\"25.0.3\"\n"), "");
        Path script = Files.writeString(directory.resolve("run-java.sh"), "#!/bin/sh\nexec java \"$@\"\n");

        assertEquals(Optional.empty(), ProgramJava.refusal(List.of(java.toString(), "Main"), Map.of()));
        assertEquals(Optional.empty(), ProgramJava.refusal(List.of(script.toString()), Map.of()));
        assertEquals(Optional.empty(), ProgramJava.refusal(List.of("java"), Map.of("PATH", "/nowhere")));
    }

    /** A Java home with {@code bin/java}, a shell script running {@code script}, and a release file if given. */
    private Path javaHome(String name, Optional<String> release, String script) throws IOException {
        Path bin = Files.createDirectories(directory.resolve(name).resolve("bin"));
        Path java = Files.writeString(bin.resolve("java"), "#!/bin/sh\n" + script + "\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        if (release.isPresent()) {
            Files.writeString(directory.resolve(name).resolve("release"), release.get());
        }
        return java;
    }
}
