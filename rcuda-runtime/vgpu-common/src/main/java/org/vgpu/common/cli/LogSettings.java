package org.vgpu.common.cli;

/**
 * How vgpu's log lines look (the SLF4J simple logger's settings, as system properties, each left as it is where the
 * user or the unit set it): every line with its date and time, as daemons' logs need when read outside the journal;
 * and in a user's program (and in {@code vgpu run}, whose stderr is the program's) only warnings and errors, so the
 * program's stderr holds what matters to it; the same for {@code vgpu config}, whose stdout is a file to install and
 * whose stderr is its verdict. Applied before the first logger is made.
 */
public final class LogSettings {
    static final String PREFIX = "org.slf4j.simpleLogger.";

    private LogSettings() {}

    /** A vgpu command: timestamps; {@code vgpu run} and {@code vgpu config} log warnings and errors only. */
    public static void forCommand(String command) {
        setIfAbsent("showDateTime", "true");
        setIfAbsent("dateTimeFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX");
        if (command.equals("run") || command.equals("config")) {
            forUserProgram();
        }
    }

    /** Inside a user's program: warnings and errors only. */
    public static void forUserProgram() {
        setIfAbsent("defaultLogLevel", "warn");
    }

    private static void setIfAbsent(String key, String value) {
        if (System.getProperty(PREFIX + key) == null) {
            System.setProperty(PREFIX + key, value);
        }
    }
}
