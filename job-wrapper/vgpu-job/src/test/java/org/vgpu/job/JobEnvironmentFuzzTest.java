package org.vgpu.job;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import com.code_intelligence.jazzer.junit.FuzzTest;

import org.vgpu.common.error.ConfigException;

/**
 * Fuzz target for the VGPU_* environment parser (docs/fuzzing.md): an input is an environment, one NAME=VALUE per
 * line (as {@code env} prints it). {@link JobAssembly#fromEnvironment} may only give an assembly, none, or a
 * {@link ConfigException} naming what is wrong, which `vgpu run` prints before it exits.
 */
class JobEnvironmentFuzzTest {
    @FuzzTest(maxDuration = "1m")
    void environment(byte[] input) {
        Map<String, String> environment = new HashMap<>();
        for (String line : new String(input, StandardCharsets.UTF_8).split("\n")) {
            int equals = line.indexOf('=');
            if (equals > 0) {
                environment.put(line.substring(0, equals), line.substring(equals + 1));
            }
        }
        try {
            JobAssembly.fromEnvironment(environment);
        } catch (ConfigException refused) {
            // the product's refusal
        }
    }
}
