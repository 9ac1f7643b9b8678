package org.vgpu.job;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Java of a {@code vgpu run} command that names a {@code java} binary (by path or on the program's {@code PATH}),
 * checked before the program starts: the interposer's classes are compiled for one Java release, and an older JVM
 * cannot even load its premain (it stops with "FATAL ERROR in native method: processing of -javaagent failed"), so the
 * launcher says which Java it found and what to do instead.
 *
 * <p>The version is read from the {@code release} file of the binary's Java home (symbolic links followed: {@code
 * /usr/bin/java} is the alternatives' JDK), which every JDK and JRE image since Java 9, and the JDKs of Java 8, carry:
 * reading it starts no JVM, so it costs no start-up time and sees none of the program's {@code JAVA_TOOL_OPTIONS}.
 * A home without one is asked with {@code java -version} once. A command that is not a {@code java} binary (a script,
 * a build tool) is not checked here: the JVM it starts in turn is the one that meets the interposer.
 */
final class ProgramJava {
    /** The Java release the interposer's classes need: that of the class files it is compiled to. */
    static final int NEEDED = PremainJavaCheck.neededRelease();

    private static final Pattern RELEASE_VERSION = Pattern.compile("(?m)^JAVA_VERSION=\"?([^\"\\s]+)\"?\\s*$");
    private static final Pattern VERSION_LINE = Pattern.compile("version \"([^\"]+)\"");
    private static final long VERSION_BOUND_SECONDS = 30;

    private ProgramJava() {}

    /**
     * The one line that refuses {@code command}, whose {@code java} is older than {@link #NEEDED}; empty where it is new
     * enough, or is no {@code java} binary, or its version cannot be told (the program then starts and its JVM speaks).
     */
    static Optional<String> refusal(List<String> command, Map<String, String> environment) {
        Optional<Path> java = javaBinary(command, environment);
        if (java.isEmpty()) {
            return Optional.empty();
        }
        Optional<String> version = version(java.get());
        if (version.isEmpty()) {
            return Optional.empty();
        }
        OptionalInt feature = feature(version.get());
        if (feature.isEmpty() || feature.getAsInt() >= NEEDED) {
            return Optional.empty();
        }
        return Optional.of("vgpu run: the program's java (" + java.get() + ") is Java " + version.get()
                + "; the vgpu interposer needs Java " + NEEDED + " or later in the program's JVM: start the program"
                + " with a Java " + NEEDED + "'s java, for example vgpu run -- "
                + Path.of(System.getProperty("java.home"), "bin", "java") + " ... (the Java this vgpu runs on)");
    }

    /** {@code command}'s first word as a {@code java} binary: a path, or the first on {@code PATH}; empty otherwise. */
    static Optional<Path> javaBinary(List<String> command, Map<String, String> environment) {
        if (command.isEmpty()) {
            return Optional.empty();
        }
        String first = command.getFirst();
        Path name;
        try {
            name = Path.of(first).getFileName();
        } catch (InvalidPathException e) {
            return Optional.empty();
        }
        if (name == null || !name.toString().equals("java")) {
            return Optional.empty();
        }
        if (first.contains("/")) {
            return Optional.of(Path.of(first)).filter(Files::isExecutable);
        }
        String path = environment.getOrDefault("PATH", System.getenv().getOrDefault("PATH", ""));
        for (String directory : path.split(":")) {
            Path candidate = Path.of(directory.isEmpty() ? "." : directory, first);
            if (Files.isExecutable(candidate) && !Files.isDirectory(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /** The Java version of {@code java}: its home's {@code release} file, else what {@code java -version} says. */
    static Optional<String> version(Path java) {
        try {
            Path bin = java.toRealPath().getParent();
            Path home = bin == null ? null : bin.getParent();
            Path release = home == null ? null : home.resolve("release");
            if (release != null && Files.isRegularFile(release)) {
                Matcher version = RELEASE_VERSION.matcher(Files.readString(release, StandardCharsets.ISO_8859_1));
                if (version.find()) {
                    return Optional.of(version.group(1));
                }
            }
            return askVersion(java);
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static Optional<String> askVersion(Path java) throws IOException {
        ProcessBuilder builder = new ProcessBuilder(java.toString(), "-version").redirectErrorStream(true);
        builder.environment().remove(ProgramLaunch.JAVA_TOOL_OPTIONS);
        Process process = builder.start();
        try (InputStream output = process.getInputStream()) {
            process.getOutputStream().close();
            String said = new String(output.readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(VERSION_BOUND_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return Optional.empty();
            }
            Matcher version = VERSION_LINE.matcher(said);
            return version.find() ? Optional.of(version.group(1)) : Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            return Optional.empty();
        }
    }

    /** The release a version string names ({@link PremainJavaCheck#release}); empty for text that names none. */
    static OptionalInt feature(String version) {
        int release = PremainJavaCheck.release(version);
        return release == 0 ? OptionalInt.empty() : OptionalInt.of(release);
    }
}
