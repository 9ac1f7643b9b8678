package org.vgpu.tracker.slurm;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.siteconfig.cli.SlurmGpuNodes;

/**
 * Slurm's nodes and their {@code gpu} counts for {@code vgpu config render --slurm-nodes}, read as the tracker reads
 * them ({@link SlurmCommands#inventory()}: {@code scontrol show node -d}, as text or JSON by Slurm's version).
 * Found by {@link java.util.ServiceLoader}.
 */
public final class ScontrolGpuNodes implements SlurmGpuNodes {
    /** As long as the tracker waits for one Slurm command by default (its --slurm-timeout). */
    private static final Duration TIMEOUT = Duration.ofSeconds(20);

    @Override
    public Map<String, Integer> read(SiteConfig config) {
        SlurmCommands slurm = new SlurmCommands(
                TIMEOUT,
                config.lendPartition(),
                config.lendQos(),
                config.holdersAsBorrower(),
                new HolderOutput(HolderOutput.DISCARDED));
        try {
            Map<String, Integer> gpus = new LinkedHashMap<>();
            for (SlurmNode node : slurm.inventory().nodes()) {
                gpus.put(node.name(), node.configured().getOrDefault("gpu", 0));
            }
            return gpus;
        } catch (SlurmException e) {
            throw new Unanswered(e.getMessage(), e);
        }
    }
}
