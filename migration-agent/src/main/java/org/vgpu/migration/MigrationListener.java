package org.vgpu.migration;

/**
 * Receives the report of every migration, successful or rolled back; the tracker's reporter
 * implements it. Called on the migrating thread after the app's calls run again, so a slow
 * listener does not block the app; it must not throw (a throw is logged and ignored).
 */
@FunctionalInterface
public interface MigrationListener {
    MigrationListener NONE = report -> {};

    void migrationFinished(MigrationReport report);
}
