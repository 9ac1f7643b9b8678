package org.vgpu.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

class BuildInfoTest {
    @Test
    void theBuildWroteVersionCommitAndDate() {
        BuildInfo build = BuildInfo.current();
        // Maven runs build-info/generate.sh before the tests: the values are the build's, not the fallback.
        assertTrue(build.version().matches("\\d+\\.\\d+\\.\\d+.*"), build.version());
        assertTrue(build.commit().matches("[0-9a-f]{40}(-dirty)?|unknown"), build.commit());
        assertTrue(build.built().matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ"), build.built());
    }

    @Test
    void aMissingValueReadsUnknown() throws IOException {
        BuildInfo build = BuildInfo.of(new ByteArrayInputStream("version=1.2.3\n".getBytes(StandardCharsets.UTF_8)));
        assertEquals(new BuildInfo("1.2.3", "unknown", "unknown"), build);
        assertEquals("vgpu 1.2.3 (commit unknown, built unknown)", build.line());
    }
}
