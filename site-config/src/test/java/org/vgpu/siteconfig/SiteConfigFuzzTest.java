package org.vgpu.siteconfig;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.siteconfig.render.RenderedFile;

/**
 * Fuzz target for the site configuration reader (docs/fuzzing.md): an input is the bytes of a configuration file.
 * Whatever they are, reading it either gives a configuration or one {@link SiteConfigException} listing the problems
 * (what `vgpu config check` and every daemon print); no other exception, no hang. A configuration read is rendered as
 * `vgpu config render --what vgpu.conf` writes it, and that file reads as the same configuration.
 */
class SiteConfigFuzzTest {
    @TempDir
    Path dir;

    @FuzzTest(maxDuration = "1m")
    void file(byte[] input) throws IOException {
        Path file = dir.resolve("vgpu.conf");
        Files.write(file, input);
        SiteConfig config;
        try {
            config = SiteConfigReader.read(file);
        } catch (SiteConfigException refused) {
            if (refused.getMessage() == null || refused.getMessage().isBlank()) {
                throw new AssertionError("a refused configuration without a message", refused);
            }
            return;
        }
        String rendered = RenderedFile.EFFECTIVE_CONFIG.render(config, Optional.empty());
        Files.writeString(file, rendered, StandardCharsets.UTF_8);
        SiteConfig again;
        try {
            again = SiteConfigReader.read(file);
        } catch (SiteConfigException refused) {
            throw new AssertionError("the rendered configuration does not read:\n" + rendered, refused);
        }
        assertEquals(config, again, rendered);
    }
}
