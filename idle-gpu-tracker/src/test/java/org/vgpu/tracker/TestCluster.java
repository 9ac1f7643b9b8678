package org.vgpu.tracker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;

import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.tracker.ledger.Ledger;

/**
 * The cluster the tracker's tests run against: nodes n1, n2 and n3 of 4 GPUs (80 GiB, 8 vGPUs) and 8 CPUs, node N at
 * 10.0.0.N, in Slurm ({@link InMemorySlurm}) and in the site configuration alike, which names a throwaway site key, the
 * lend partition {@code lend} and an idle grace of 10 s.
 */
public final class TestCluster {
    static final List<String> NODES = List.of("n1", "n2", "n3");

    private TestCluster() {}

    /**
     * A tracker over this cluster (a fresh {@link InMemorySlurm}, no jobs; {@code [slurm] job_partition = gpu}) with
     * {@code ledger}, its clock standing at {@code now}: for tests of the tracker's socket rather than its decisions.
     */
    public static Tracker standingTracker(Path dir, ThrowawaySiteKey key, Ledger ledger, Instant now)
            throws IOException {
        InMemorySlurm slurm = new InMemorySlurm();
        SiteConfig site = configure(dir, key, slurm, "", "[slurm]\njob_partition = gpu\n");
        return new Tracker(
                site,
                slurm,
                ledger,
                SiteKey.load(key.keyFile()),
                Tracker.Settings.defaults(),
                Clock.fixed(now, ZoneOffset.UTC));
    }

    /**
     * Adds the nodes to {@code slurm}, then writes the site configuration to {@code dir}/vgpu.conf and reads it.
     *
     * @param policy   more {@code key = value} lines of the [policy] section, each ending in a newline
     * @param sections sections after the nodes' ({@code [slurm]}, {@code [distance]}), or empty
     */
    static SiteConfig configure(Path dir, ThrowawaySiteKey key, InMemorySlurm slurm, String policy, String sections)
            throws IOException {
        StringBuilder config = new StringBuilder("""
                [cluster]
                name = test
                tracker = 127.0.0.1:7400
                token_key_file = %s
                lend_partition = lend
                [policy]
                idle_grace = 10s
                """.formatted(key.keyFile())).append(policy);
        for (String node : NODES) {
            char n = node.charAt(1);
            config.append(
                    "[node %s]\ngpus = 4\ngpu_memory = 80GiB\nvgpus = 8\nlender_port = 75%s0\naddress = 10.0.0.%s\n"
                            .formatted(node, n, n));
            slurm.addNode(node, 4, 8);
        }
        config.append(sections);
        Path file = dir.resolve("vgpu.conf");
        Files.writeString(file, config);
        return SiteConfigReader.read(file);
    }
}
