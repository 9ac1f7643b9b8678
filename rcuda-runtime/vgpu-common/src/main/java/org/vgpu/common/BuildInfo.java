package org.vgpu.common;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Objects;
import java.util.Properties;

/**
 * Which build of vgpu this is: its version, the git commit it was built from and when, as the build wrote them
 * ({@code build-info/generate.sh}, into {@code org/vgpu/common/build-info.properties}). {@code vgpu --version}
 * prints it and the tracker exports it as the {@code vgpu_build_info} metric, so an admin can tell which build
 * runs on a node.
 *
 * @param version the project's version
 * @param commit  the git commit, {@code -dirty} when built from changed files, {@code unknown} outside a checkout
 * @param built   when it was built, UTC, ISO 8601
 */
public record BuildInfo(String version, String commit, String built) {
    static final String RESOURCE = "build-info.properties";
    static final String UNKNOWN = "unknown";

    public BuildInfo {
        Objects.requireNonNull(version, "version");
        Objects.requireNonNull(commit, "commit");
        Objects.requireNonNull(built, "built");
    }

    /** This build's: {@code unknown} for each value when the classes were not built by Maven (an IDE's build). */
    public static BuildInfo current() {
        try (InputStream in = BuildInfo.class.getResourceAsStream(RESOURCE)) {
            return in == null ? new BuildInfo(UNKNOWN, UNKNOWN, UNKNOWN) : of(in);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read vgpu's " + RESOURCE, e);
        }
    }

    static BuildInfo of(InputStream properties) throws IOException {
        Properties values = new Properties();
        values.load(properties);
        return new BuildInfo(
                values.getProperty("version", UNKNOWN),
                values.getProperty("commit", UNKNOWN),
                values.getProperty("built", UNKNOWN));
    }

    /** The line {@code vgpu --version} prints: {@code vgpu VERSION (commit COMMIT, built DATE)}. */
    public String line() {
        return "vgpu " + version + " (commit " + commit + ", built " + built + ")";
    }
}
