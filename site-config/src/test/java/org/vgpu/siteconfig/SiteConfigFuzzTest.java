package org.vgpu.siteconfig;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fuzz target for the site configuration reader (docs/fuzzing.md): an input is the bytes of a configuration file.
 * Whatever they are, reading it either gives a configuration or one {@link SiteConfigException} listing the problems
 * (what `vgpu config check` and every daemon print); no other exception, no hang.
 */
class SiteConfigFuzzTest {
    @TempDir
    Path dir;

    @FuzzTest(maxDuration = "1m")
    void file(byte[] input) throws IOException {
        Path file = dir.resolve("vgpu.conf");
        Files.write(file, input);
        try {
            SiteConfigReader.read(file);
        } catch (SiteConfigException refused) {
            if (refused.getMessage() == null || refused.getMessage().isBlank()) {
                throw new AssertionError("a refused configuration without a message", refused);
            }
        }
    }
}
