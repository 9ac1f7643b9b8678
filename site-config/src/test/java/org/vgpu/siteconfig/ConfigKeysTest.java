package org.vgpu.siteconfig;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

/**
 * The key table is the one description of the configuration: README's key reference is it written out. Run with
 * {@code -Dvgpu.writeReadme=true} after changing the table to write README's tables anew (the prose around them stays
 * as it is).
 */
class ConfigKeysTest {
    private static final Path README = Path.of("README.md");
    private static final List<String> SECTIONS =
            List.of(ConfigKeys.CLUSTER, ConfigKeys.POLICY, ConfigKeys.SLURM, ConfigKeys.TRACKER, ConfigKeys.NODE);

    @Test
    void readmeKeyReferenceIsTheTable() throws IOException {
        String readme = Files.readString(README, StandardCharsets.UTF_8);
        String written = readme;
        for (String section : SECTIONS) {
            written = withTable(written, section);
        }
        if (Boolean.getBoolean("vgpu.writeReadme")) {
            Files.writeString(README, written, StandardCharsets.UTF_8);
            readme = written;
        }
        assertEquals(
                written,
                readme,
                "site-config/README.md's key tables differ from ConfigKeys; write them anew with -Dvgpu.writeReadme=true");
    }

    @Test
    void everyKeyOfTheTableHasASectionTheReaderKnowsAndANameOnce() {
        Set<String> seen = new HashSet<>();
        for (ConfigKey<?> key : ConfigKeys.ALL) {
            assertTrue(SECTIONS.contains(key.section()), key.toString());
            assertTrue(seen.add(key.toString()), key + " twice");
            assertTrue(key.name().matches("[a-z][a-z_]*"), key.toString());
        }
        assertEquals(
                ConfigKeys.ALL.size(),
                SECTIONS.stream().mapToInt(s -> ConfigKeys.of(s).size()).sum());
    }

    @Test
    void theRecordsDefaultsAreTheTables() {
        assertEquals(
                new Policy(
                        ConfigKeys.IDLE_GRACE.defaultValue(),
                        ConfigKeys.MAX_BORROWED_PER_JOB.defaultValue(),
                        ConfigKeys.BORROWING.defaultValue(),
                        ConfigKeys.FALLBACK_LOCAL_ONLY.defaultValue(),
                        new MigrationPolicy(
                                ConfigKeys.MIGRATE_HOME.defaultValue(),
                                ConfigKeys.MIGRATION_COOLDOWN.defaultValue(),
                                ConfigKeys.MIGRATION_END_GUARD.defaultValue(),
                                ConfigKeys.MEM_SYNC_BANDWIDTH.defaultValue(),
                                ConfigKeys.REPLAY_COST.defaultValue())),
                Policy.defaults());
        assertEquals("/run/vgpu", SlurmSettings.DEFAULT_AGENT_SOCKET_DIR.toString());
        assertEquals(10_000_000_000L, MigrationPolicy.DEFAULT_MEM_SYNC_BYTES_PER_SECOND);
    }

    /** The text with the table of one section between its two marker lines written from the key table. */
    private static String withTable(String text, String section) {
        String begin = "<!-- keys of [" + section + "]: written from ConfigKeys.java, compared by ConfigKeysTest -->\n";
        String end = "<!-- end of the keys of [" + section + "] -->\n";
        int from = text.indexOf(begin);
        int to = text.indexOf(end);
        assertTrue(from >= 0 && to > from, "README.md lacks the marker lines of [" + section + "]'s keys: " + begin);
        return text.substring(0, from + begin.length()) + table(section) + text.substring(to);
    }

    private static String table(String section) {
        StringBuilder table = new StringBuilder("| key | value | default | meaning |\n| --- | --- | --- | --- |\n");
        for (ConfigKey<?> key : ConfigKeys.of(section)) {
            String defaultText =
                    key.defaultValueText().map(value -> "`" + value + "`").orElse(key.defaultText());
            table.append("| `")
                    .append(key.name())
                    .append("` | ")
                    .append(key.valueText())
                    .append(" | ")
                    .append(defaultText)
                    .append(" | ")
                    .append(key.meaning())
                    .append(" |\n");
        }
        return table.toString();
    }
}
