package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.error.InputException;

/**
 * {@code vgpu run --ranks N -- java ...}, the command: what is read from the program's java command, the command the
 * ranks are started with, and the commands refused. The ranks' runs are the integration tests' MpjRanksRunTest.
 */
class MpjRanksTest {
    @TempDir
    Path directory;

    @Test
    void theProgramsJavaCommandIsReadForItsJvmOptionsClassPathMainClassAndArguments() {
        MpjRanks.JavaProgram program = MpjRanks.parse(List.of(
                "/opt/jdk/bin/java",
                "-Xmx2g",
                "-Dmd.seed=7",
                "--add-opens",
                "java.base/java.lang=ALL-UNNAMED",
                "-cp",
                "app.jar:lib/*",
                "org.example.Md",
                "200",
                "-v"));

        assertEquals("/opt/jdk/bin/java", program.java());
        assertEquals(
                List.of("-Xmx2g", "-Dmd.seed=7", "--add-opens", "java.base/java.lang=ALL-UNNAMED"),
                program.jvmOptions());
        assertEquals("app.jar:lib/*", program.classPath());
        assertEquals("org.example.Md", program.mainClass());
        assertEquals(List.of("200", "-v"), program.arguments(), "words after the main class are the program's");
    }

    @Test
    void theRanksRunMpjsMulticoreStarterInTheProgramsJavaWithAPrivateMpjHomeRemovedAfterwards() throws IOException {
        Path mpj = directory.resolve("mpj-v0_44");
        Files.createDirectories(mpj.resolve("lib"));
        Files.createDirectories(mpj.resolve("conf"));
        for (String jar : List.of(
                "starter.jar",
                "smpdev.jar",
                "xdev.jar",
                "mpjbuf.jar",
                "loader2.jar",
                "mpiExp.jar",
                "mpi.jar",
                "mpjdev.jar",
                "log4j-1.2.jar")) {
            Files.writeString(mpj.resolve("lib").resolve(jar), jar);
        }
        Files.writeString(mpj.resolve("conf/mpjexpress.conf"), "# MPJ's configuration\n");

        Path home;
        try (MpjRanks ranks = MpjRanks.prepare(
                3,
                List.of("/opt/jdk/bin/java", "-Xmx1g", "-cp", "app.jar", "org.example.Md", "200"),
                3,
                Map.of(MpjRanks.MPJ_DIR_VARIABLE, mpj.toString()))) {
            home = Path.of(ranks.environment().get("MPJ_HOME"));
            Path lib = home.resolve("lib");
            assertEquals(
                    List.of(
                            "/opt/jdk/bin/java",
                            "-Xmx1g",
                            "-cp",
                            Stream.of(
                                            "smpdev.jar",
                                            "xdev.jar",
                                            "mpjbuf.jar",
                                            "loader2.jar",
                                            "starter.jar",
                                            "mpiExp.jar")
                                    .map(jar -> lib.resolve(jar).toString())
                                    .collect(Collectors.joining(File.pathSeparator)),
                            MpjRanks.MULTICORE_STARTER,
                            Path.of("").toAbsolutePath().toString(),
                            "3",
                            "smpdev",
                            "useLocalLoader",
                            "app.jar",
                            RankMain.class.getName(),
                            "org.example.Md",
                            "200"),
                    ranks.command());
            assertEquals("mpi.jar", Files.readString(lib.resolve("mpi.jar")), "MPJ's jars are copied into the home");
            assertEquals("log4j-1.2.jar", Files.readString(lib.resolve("log4j-1.2.jar")), "log4j beside them");
            assertTrue(Files.exists(home.resolve("conf/mpjexpress.conf")));
        }
        assertFalse(Files.exists(home), "the private MPJ_HOME is removed when the run ends");
    }

    @Test
    void aJarsMainClassComesFromItsManifest() throws IOException {
        Path jar = directory.resolve("md.jar");
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(Attributes.Name.MAIN_CLASS, "org.example.Md");
        try (OutputStream file = Files.newOutputStream(jar);
                JarOutputStream out = new JarOutputStream(file, manifest)) {
            out.flush();
        }

        MpjRanks.JavaProgram program = MpjRanks.parse(List.of("java", "--class-path=ignored", "-jar", jar.toString()));

        assertEquals(jar.toString(), program.classPath());
        assertEquals("org.example.Md", program.mainClass());
        assertEquals(List.of(), program.arguments());
    }

    @Test
    void commandsThatAreNotJavaWithAMainClassAreRefusedSayingWhatIs() {
        Map<List<String>, String> refusals = Map.of(
                List.of("python3", "md.py"), "not python3 (vgpu starts MPJ Express's multicore starter with that java",
                List.of("java", "-m", "md/org.example.Md"), "-m is not supported",
                List.of("java", "--module-path=mods", "Md"), "--module-path=mods is not supported",
                List.of("java", "Md.java"), "a source file (Md.java) is not supported",
                List.of("java", "-cp", "."), "java -cp . names no main class",
                List.of("java", "-cp"), "-cp needs a value");
        refusals.forEach((command, expected) -> {
            InputException refused = assertThrows(InputException.class, () -> MpjRanks.parse(command));
            assertTrue(
                    refused.getMessage().startsWith("--ranks runs `java [JVM options] -cp CLASSPATH MAIN"),
                    command + ": " + refused.getMessage());
            assertTrue(refused.getMessage().contains(expected), command + ": " + refused.getMessage());
        });
    }
}
