package org.vgpu.siteconfig.cli;

import java.util.Map;

import org.vgpu.siteconfig.SiteConfig;

/**
 * The running Slurm's nodes with their {@code gpu} GRES counts, for {@code vgpu config render --slurm-nodes}. The
 * tracker's Slurm reader provides it through {@link java.util.ServiceLoader}, so render reads Slurm as the tracker
 * does (site-config cannot depend on the tracker, which depends on it).
 */
public interface SlurmGpuNodes {
    /**
     * @param config the site configuration, for how the tracker talks to Slurm
     * @return every node Slurm knows, in Slurm's order, with its {@code gpu} count (0 for a node without GPUs)
     * @throws Unanswered when Slurm does not answer, or answers what cannot be read
     */
    Map<String, Integer> read(SiteConfig config);

    /** Slurm did not answer; the message says how, in Slurm's or the tracker's words. */
    final class Unanswered extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public Unanswered(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
