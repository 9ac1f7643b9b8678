package org.vgpu.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The environment reference names every variable vgpu's job side reads or sets: each variable of the bridge contract
 * (its {@code env_*} lines, the one source of their names) and each {@code VGPU_*} variable the C code reads (the SPANK
 * bridge's and vgpu's {@code libcuda.so.1}). A variable may be described where the reference points for it instead:
 * the SPANK bridge's README, which describes the job's environment the bridge makes.
 */
class EnvironmentReferenceTest {
    private static final Path ROOT = Path.of("..", "..").toAbsolutePath().normalize();
    private static final List<Path> DESCRIPTIONS =
            List.of(ROOT.resolve("docs/reference/environment.md"), ROOT.resolve("slurm-spank-bridge/README.md"));
    private static final Path CONTRACT = ROOT.resolve("slurm-spank-bridge/contract/grammar.conf");
    private static final List<Path> C_SOURCES =
            List.of(ROOT.resolve("slurm-spank-bridge/src"), ROOT.resolve("rcuda-runtime/vgpu-libcuda/src"));
    private static final Pattern CONTRACT_VARIABLE = Pattern.compile("(?m)^env_\\w+ = (\\S+)$");
    private static final Pattern C_READ = Pattern.compile("getenv\\(\"(VGPU_\\w+)\"\\)");

    @Test
    void everyVariableOfTheContractAndOfTheCCodeIsDescribed() throws IOException {
        Set<String> variables = new TreeSet<>(names(CONTRACT_VARIABLE, Files.readString(CONTRACT)));
        assertTrue(variables.contains("VGPU_ASSEMBLY"), "no env_ line found in " + CONTRACT + ": " + variables);
        for (Path folder : C_SOURCES) {
            try (Stream<Path> files = Files.walk(folder)) {
                for (Path file : files.filter(file -> file.toString().matches(".*\\.[ch]"))
                        .toList()) {
                    variables.addAll(names(C_READ, Files.readString(file)));
                }
            }
        }
        assertTrue(variables.contains("VGPU_REAL_LIBCUDA"), "no getenv(\"VGPU_...\") found in " + C_SOURCES);
        StringBuilder descriptions = new StringBuilder();
        for (Path description : DESCRIPTIONS) {
            descriptions.append(Files.readString(description));
        }
        String described = descriptions.toString();
        List<String> missing = variables.stream()
                .filter(name -> !described.contains("`" + name + "`"))
                .toList();
        assertEquals(List.of(), missing, "variables none of " + DESCRIPTIONS + " describes");
    }

    private static Set<String> names(Pattern pattern, String text) {
        Set<String> names = new TreeSet<>();
        Matcher matcher = pattern.matcher(text);
        while (matcher.find()) {
            names.add(matcher.group(1));
        }
        return names;
    }
}
