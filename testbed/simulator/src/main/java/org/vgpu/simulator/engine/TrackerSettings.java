package org.vgpu.simulator.engine;

import java.util.Objects;

import org.vgpu.siteconfig.Policy;
import org.vgpu.tracker.cli.TrackerCommand;

/**
 * The tracker the borrowing policies simulate: the site's {@code [policy]} (idle grace, most GPUs borrowed per job,
 * borrowing on or off, when moves home pay) and how often it plans ({@code vgpu tracker --poll}).
 *
 * @param sitePolicy the {@code [policy]} of the site's configuration
 * @param pollSeconds seconds between the tracker's planning passes, {@code vgpu tracker --poll}
 */
public record TrackerSettings(Policy sitePolicy, double pollSeconds) {
    /** A site without a {@code [policy]} section and a tracker with its default poll. */
    public static final TrackerSettings DEFAULTS =
            new TrackerSettings(Policy.defaults(), TrackerCommand.DEFAULT_POLL_SECONDS);

    public TrackerSettings {
        Objects.requireNonNull(sitePolicy, "sitePolicy");
        if (!(pollSeconds > 0) || Double.isInfinite(pollSeconds)) {
            throw new IllegalArgumentException("the tracker's poll is a number of seconds > 0, got " + pollSeconds);
        }
    }
}
