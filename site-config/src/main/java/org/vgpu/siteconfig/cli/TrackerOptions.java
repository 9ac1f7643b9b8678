package org.vgpu.siteconfig.cli;

import java.nio.file.Path;
import java.util.Optional;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.line.TrackerAdminClient;
import org.vgpu.common.net.Endpoint;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.siteconfig.SiteConfigReader;

/**
 * The options of the commands that ask the tracker ({@code vgpu migrate JOB VGPU}, {@code vgpu drain}, {@code vgpu
 * hook}, and {@code vgpu report}, which reads only): where the tracker is ({@code --tracker HOST:PORT}, else the site configuration's, {@code
 * --config FILE}, default {@value #DEFAULT_CONFIG}) and how it authenticates admins ({@code --auth none|munge}, as
 * the tracker's own {@code --auth}; by default as the configuration's {@code [slurm] auth} says, which its rendered
 * unit starts the tracker with).
 */
public final class TrackerOptions {
    public static final String DEFAULT_CONFIG = "/etc/vgpu/vgpu.conf";

    private TrackerOptions() {}

    /** Adds {@code --config}, {@code --tracker} and {@code --auth} to {@code options}. */
    public static Options addTo(Options options) {
        return addLocationTo(options)
                .addOption(Option.builder()
                        .longOpt("auth")
                        .hasArg()
                        .argName("none|munge")
                        .desc("munge: sign the request with MUNGE, for a tracker started with --auth munge (default:"
                                + " the configuration's [slurm] auth; none with --tracker)")
                        .get());
    }

    /**
     * Adds {@code --config} and {@code --tracker} alone, for a command that only reads from the tracker ({@code vgpu
     * report}) and so signs nothing; {@link #tracker} reads them.
     */
    public static Options addLocationTo(Options options) {
        return options.addOption(Option.builder()
                        .longOpt("config")
                        .hasArg()
                        .argName("FILE")
                        .desc("the site configuration, which names the tracker (default " + DEFAULT_CONFIG + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("tracker")
                        .hasArg()
                        .argName("HOST:PORT")
                        .desc("the tracker to ask, instead of the configuration's")
                        .get());
    }

    /** Where an admin command's request goes and how it is signed, from one reading of the configuration. */
    public record AdminTarget(Endpoint tracker, TrackerAdminClient.Auth auth) {}

    /** The tracker's address: {@code --tracker}, else the configuration's. */
    public static Endpoint tracker(CommandLine line) throws ParseException {
        Optional<SiteConfig> site = configuration(line);
        return site.isPresent() ? site.get().tracker() : givenTracker(line);
    }

    /**
     * The tracker's address as {@link #tracker} gives it, and how to sign the request: {@code --auth}, else as the
     * site configuration's tracker expects ({@code [slurm] auth}), else (with {@code --tracker}) none.
     */
    public static AdminTarget adminTarget(CommandLine line) throws ParseException {
        Optional<SiteConfig> site = configuration(line);
        Endpoint tracker = site.isPresent() ? site.get().tracker() : givenTracker(line);
        if (!line.hasOption("auth")) {
            boolean munge = site.isPresent() && site.get().slurm().munge();
            return new AdminTarget(tracker, munge ? TrackerAdminClient.Auth.MUNGE : TrackerAdminClient.Auth.NONE);
        }
        return new AdminTarget(
                tracker,
                switch (line.getOptionValue("auth")) {
                    case "none" -> TrackerAdminClient.Auth.NONE;
                    case "munge" -> TrackerAdminClient.Auth.MUNGE;
                    default ->
                        throw new ParseException(
                                "--auth takes none or munge, got '" + line.getOptionValue("auth") + "'");
                });
    }

    /** The site configuration ({@code --config}, else the default file), none with {@code --tracker}. */
    private static Optional<SiteConfig> configuration(CommandLine line) throws ParseException {
        if (line.hasOption("tracker") && line.hasOption("config")) {
            throw new ParseException("give --config FILE or --tracker HOST:PORT, not both");
        }
        if (line.hasOption("tracker")) {
            return Optional.empty();
        }
        return Optional.of(SiteConfigReader.read(Path.of(line.getOptionValue("config", DEFAULT_CONFIG))));
    }

    private static Endpoint givenTracker(CommandLine line) throws ParseException {
        try {
            return Endpoint.parse(line.getOptionValue("tracker"));
        } catch (VgpuFailure e) {
            throw new ParseException("--tracker: " + e.detail());
        }
    }
}
