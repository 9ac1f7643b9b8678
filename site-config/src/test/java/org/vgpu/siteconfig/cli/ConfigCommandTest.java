package org.vgpu.siteconfig.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.siteconfig.SiteConfigFiles;
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.siteconfig.render.RenderedFile;

class ConfigCommandTest {
    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int config(String... args) {
        return SubcommandRunner.run(
                new ConfigCommand(),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    /** vgpu config with --slurm-nodes reading {@code slurm}, or no reader at all when it is empty. */
    private int configWithSlurm(Optional<SlurmGpuNodes> slurm, String... args) {
        return SubcommandRunner.run(
                new ConfigCommand(() -> slurm),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    /** A Slurm that answers these nodes with their GPU counts, in this order. */
    private static Optional<SlurmGpuNodes> slurmWith(Object... nodesAndGpus) {
        Map<String, Integer> nodes = new LinkedHashMap<>();
        for (int i = 0; i < nodesAndGpus.length; i += 2) {
            nodes.put((String) nodesAndGpus[i], (Integer) nodesAndGpus[i + 1]);
        }
        return Optional.of(config -> nodes);
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void checkOfAValidFileSummarizesTheEffectiveConfiguration() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(0, config("check", file.toString()), err());
        assertTrue(out().contains(file.toAbsolutePath() + ": valid"), out());
        assertTrue(out().contains("cluster testbed: 3 nodes, 7 GPUs, 14 vGPUs"), out());
        assertTrue(out().contains("tracker 127.0.0.1:7400, /metrics off; token key "), out());
        assertTrue(out().contains("private, fingerprint "), out());
        assertTrue(
                out().contains("policy: idle_grace 45s, max_borrowed_per_job 3, borrowing on, fallback_local_only on"),
                out());
        assertTrue(
                out().contains(
                                "node n2: 2 GPUs x 40 GB, 4 vGPUs, devices /dev/nvidia0,/dev/nvidia2, lender 10.0.0.2:7501"),
                out());
        assertTrue(out().contains("distances: n1-n2=1 n1-n3=3 n2-n3=2"), out());
        assertEquals("", err());
    }

    @Test
    void checkOfALargeSiteSaysWhatItsDistanceTableGivesInsteadOfPrintingEveryPair() {
        StringBuilder text = new StringBuilder(SiteConfigFiles.valid(dir)
                .substring(0, SiteConfigFiles.valid(dir).indexOf("[node n1]")));
        for (int i = 0; i < 40; i++) {
            text.append("[node g%02d]\ngpus = 1\ngpu_memory = 16GiB\nvgpus = 1\nlender_port = 7500\n".formatted(i));
        }
        Path file = SiteConfigFiles.write(
                dir, text.append("[distance]\ng00 g01 = 1\ndefault = 2\n").toString());

        assertEquals(0, config("check", file.toString()), err());
        assertTrue(
                out().contains("\ndistances: 1 pair listed, every other pair 2; 40 nodes make 780 pairs, too many to"
                        + " print each\n"),
                out());
    }

    @Test
    void checkPrintsEveryProblemWithItsLineAndFails() {
        Path file = SiteConfigFiles.write(
                dir,
                SiteConfigFiles.valid(dir)
                        .replace("idle_grace = 45s", "idle_grace = soon")
                        .replace("n1 n2 = 1", "n1 n7 = 1"));

        assertEquals(1, config("check", file.toString()));
        assertTrue(err().contains(file.toAbsolutePath() + ":10: idle_grace: 'soon' is not a duration"), err());
        assertTrue(err().contains(file.toAbsolutePath() + ":46: distance to unknown node 'n7'"), err());
        assertTrue(err().contains("vgpu config check: 2 problems in " + file), err());
        assertEquals("", out());
    }

    @Test
    void checkReportsAMissingFile() {
        assertEquals(1, config("check", dir.resolve("absent.conf").toString()));
        assertTrue(err().contains("absent.conf: no such file"), err());
    }

    @Test
    void renderPrintsTheChosenFile() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(0, config("render", "--what", "gres.conf", file.toString()), err());
        assertEquals(RenderedFile.GRES_CONF.render(SiteConfigReader.read(file), Optional.empty()), out());
    }

    /** Without --what (or with --list), render says which file goes where, each with the name --what takes. */
    @Test
    void renderWithoutWhatSaysWhichFileGoesWhere() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(0, config("render", file.toString()), err());
        String listed = out();
        assertTrue(
                listed.startsWith("the files of cluster testbed (" + file.toAbsolutePath()
                        + "), and where each goes; print one with vgpu config render --what NAME " + file + "\n"),
                listed);
        assertTrue(
                listed.contains("\npieces to add to the site's own Slurm files:\n  vgpu.slurm.conf\n"
                        + "      /etc/slurm/vgpu.slurm.conf on every node"),
                listed);
        assertTrue(
                listed.contains("\n  plugstack.conf.d/vgpu.conf\n      /etc/slurm/plugstack.conf.d/vgpu.conf on every"
                        + " node and submit host"),
                listed);
        assertTrue(listed.contains("\nwhole files, for a cluster without its own:\n  slurm.conf\n"), listed);
        assertTrue(listed.contains("\nsystemd units:\n  vgpu-tracker.service\n"), listed);
        assertTrue(listed.contains("\n  vgpu-lender.service --node NODE\n"), listed);
        for (RenderedFile rendered : RenderedFile.values()) {
            assertTrue(listed.contains("      " + rendered.destination() + "\n"), rendered.fileName());
        }

        out.reset();
        assertEquals(0, config("render", "--list", file.toString()), err());
        assertEquals(listed, out());
    }

    @Test
    void renderOfAPerNodeFileTakesTheNode() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(0, config("render", "--what", "vgpu-lender.service", "--node", "n2", file.toString()), err());
        assertTrue(out().contains("lender --listen 10.0.0.2:7501 --devices 0,1 "), out());
    }

    @Test
    void renderOfAPerNodeFileForAnUnknownNodeNamesTheNodes() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(2, config("render", "--what", "vgpu-lender.service", "--node", "n9", file.toString()));
        assertTrue(err().contains("--node: no node 'n9' in " + file + "; its nodes are n[1-3]"), err());
    }

    @Test
    void renderOfAnInvalidFilePrintsItsProblems() {
        Path file = SiteConfigFiles.write(dir, "[cluster]\n");

        assertEquals(1, config("render", "--what", "slurm.conf", file.toString()));
        assertTrue(err().contains(":1: [cluster] lacks 'name'"), err());
        assertEquals("", out());
    }

    @Test
    void withoutAFileTheSitesConfigurationIsReadWhereEveryCommandLooksForIt() {
        assertEquals(1, config("check"));
        assertTrue(err().contains(TrackerOptions.DEFAULT_CONFIG), err());
        assertEquals(1, config("render", "--what", "gres.conf"));
        assertTrue(err().contains(TrackerOptions.DEFAULT_CONFIG), err());
    }

    @Test
    void badUsageIsExplained() {
        assertEquals(2, config());
        assertTrue(err().contains("expected 'check [FILE]' or 'render [--what NAME] [FILE]'"), err());
        assertTrue(err().endsWith("\nsee `vgpu config --help`\n"), err());
        assertEquals(2, err().lines().count(), err());

        assertEquals(2, config("validate", "x.conf"));
        assertEquals(2, config("validate"));
        assertEquals(2, config("check", "a.conf", "b.conf"));
        assertEquals(2, config("render", "--list", "--what", "gres.conf", "x.conf"));
        assertTrue(err().contains("--list renders nothing: give it alone, or --what NAME without it"), err());
        assertEquals(2, config("render", "--what", "slurmdbd.conf", "x.conf"));
        assertTrue(
                err().contains("--what must be one of vgpu.slurm.conf, plugstack.conf.d/vgpu.conf, vgpu_job_submit.lua,"
                        + " gres.conf, slurm.conf"),
                err());
        assertEquals(2, config("check", "--what", "gres.conf", "x.conf"));
        assertTrue(err().contains("--what, --node, --list and --slurm-nodes belong to render"), err());
        assertEquals(2, config("check", "--slurm-nodes", "x.conf"));
        assertEquals(2, config("render", "--what", "vgpu-lender.service", "x.conf"));
        assertTrue(err().contains("vgpu-lender.service differs between nodes: add --node NODE"), err());
        assertEquals(2, config("render", "--what", "gres.conf", "--node", "n1", "x.conf"));
        assertTrue(err().contains("--node does not apply: gres.conf is the same on every node"), err());
    }

    @Test
    void renderWithSlurmNodesTakesSlurmsGpuNodesAndCountsAndTheSectionsOtherSettings() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(
                0,
                configWithSlurm(
                        slurmWith("login1", 0, "n2", 2, "n1", 2, "n3", 0),
                        "render",
                        "--slurm-nodes",
                        "--what",
                        "gres.conf",
                        file.toString()),
                err());

        // Slurm's order and counts; n1's default device files follow its count, n2 keeps the files its section names.
        assertTrue(
                out().endsWith("NodeName=n2 Name=gpu File=/dev/nvidia0,/dev/nvidia2\nNodeName=n2 Name=vgpu Count=4\n"
                        + "NodeName=n1 Name=gpu File=/dev/nvidia[0-1]\nNodeName=n1 Name=vgpu Count=8\n"),
                out());
        assertEquals("vgpu config render: --slurm-nodes: left out n3, which Slurm has no GPUs on\n", err());
    }

    @Test
    void renderWithSlurmNodesGivesTheLendPartitionSlurmsGpuNodes() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(
                0,
                configWithSlurm(
                        slurmWith("n1", 4, "n2", 2, "n3", 1),
                        "render",
                        "--slurm-nodes",
                        "--what",
                        "vgpu.slurm.conf",
                        file.toString()),
                err());

        assertTrue(out().contains("\nPartitionName=vgpu-lend Nodes=n[1-3] "), out());
        assertEquals("", err());
    }

    @Test
    void renderWithSlurmNodesRefusesGpuNodesThatNoSectionNames() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(
                1,
                configWithSlurm(
                        slurmWith("n1", 4, "g7", 2, "g8", 2),
                        "render",
                        "--slurm-nodes",
                        "--what",
                        "gres.conf",
                        file.toString()));

        assertTrue(
                err().startsWith(
                                "vgpu config render: --slurm-nodes: Slurm's GPU nodes g[7-8] have no [node] section in "
                                        + file.toAbsolutePath()),
                err());
        assertEquals("", out());
    }

    @Test
    void renderWithSlurmNodesRefusesDeviceFilesForAnotherGpuCountThanSlurms() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(
                1,
                configWithSlurm(slurmWith("n2", 3), "render", "--slurm-nodes", "--what", "gres.conf", file.toString()));

        assertTrue(
                err().contains("node n2: gpu_devices = /dev/nvidia0,/dev/nvidia2 in " + file.toAbsolutePath()
                        + " names 2 files, and Slurm gives the node 3 GPUs"),
                err());
        assertEquals("", out());
    }

    @Test
    void renderWithSlurmNodesRefusesWhenSlurmDoesNotAnswer() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));
        SlurmGpuNodes silent = config -> {
            throw new SlurmGpuNodes.Unanswered(
                    "scontrol show node -d failed: slurm_load_node error: Unable to contact slurm controller", null);
        };

        assertEquals(1, configWithSlurm(Optional.of(silent), "render", "--slurm-nodes", "--list", file.toString()));

        assertEquals(
                "vgpu config render: --slurm-nodes: Slurm did not answer (scontrol show node -d failed: slurm_load_node"
                        + " error: Unable to contact slurm controller); render without --slurm-nodes, or where scontrol"
                        + " reaches slurmctld\n",
                err());
        assertEquals("", out());
    }

    @Test
    void renderWithSlurmNodesRefusesWithoutASlurmReader() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals(1, configWithSlurm(Optional.empty(), "render", "--slurm-nodes", "--list", file.toString()));

        assertTrue(err().contains("--slurm-nodes needs the tracker's Slurm reader"), err());
        assertEquals("", out());
    }
}
