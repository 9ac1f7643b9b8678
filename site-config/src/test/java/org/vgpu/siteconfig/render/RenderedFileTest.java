package org.vgpu.siteconfig.render;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.vgpu.common.error.ConfigException;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.siteconfig.SiteConfigFiles;
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.siteconfig.SlurmSettings;

class RenderedFileTest {
    @TempDir
    Path dir;

    private SiteConfig config() {
        return SiteConfigReader.read(SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir)));
    }

    private static List<String> linesStartingWith(String text, String prefix) {
        return text.lines().filter(line -> line.startsWith(prefix)).toList();
    }

    /** Renders a cluster-wide file. */
    private String render(RenderedFile file) {
        return file.render(config(), Optional.empty());
    }

    @ParameterizedTest
    @EnumSource(RenderedFile.class)
    void everyFileNamesItsSourceAndLeavesNoPlaceholder(RenderedFile file) {
        SiteConfig config = config();
        String text = file.render(config, file.perNode() ? config.node("n2") : Optional.empty());

        assertTrue(text.contains(dir.resolve("vgpu.conf").toAbsolutePath().toString()), text);
        assertTrue(text.contains("testbed"), text);
        assertFalse(text.contains("{{"), text);
        assertTrue(text.endsWith("\n"), "a file ends with a newline");
    }

    @Test
    void slurmConfHasOneNodeLineEachAndBothPartitions() {
        String text = render(RenderedFile.SLURM_CONF);

        assertEquals(
                List.of(
                        "NodeName=n1 NodeAddr=10.0.0.1 Port=6818 CPUs=64 RealMemory=524288 Gres=gpu:4,vgpu:8 State=UNKNOWN",
                        "NodeName=n2 NodeAddr=10.0.0.2 Gres=gpu:2,vgpu:4 State=UNKNOWN",
                        "NodeName=n3 NodeHostname=gpu-n3.cluster Gres=gpu:1,vgpu:2 State=UNKNOWN"),
                linesStartingWith(text, "NodeName="));
        assertEquals(
                List.of(
                        "PartitionName=batch Nodes=n[1-3] Default=YES MaxTime=INFINITE State=UP",
                        // open to users' groups: the tracker submits holders as their borrowers (root's --uid), and
                        // the job_submit.lua module keeps everyone else out
                        "PartitionName=vgpu-lend Nodes=n[1-3] Hidden=YES PriorityTier=65533 QOS=vgpu-lend"
                                + " MaxTime=INFINITE State=UP"),
                linesStartingWith(text, "PartitionName="));
        assertEquals(List.of("GresTypes=gpu,vgpu"), linesStartingWith(text, "GresTypes="));
        assertEquals(List.of("JobSubmitPlugins=lua"), linesStartingWith(text, "JobSubmitPlugins="));
    }

    @Test
    void jobPartitionKeepsOneCpuPerGpuForHoldersWhenEveryNodeStatesItsCpus() {
        String valid = SiteConfigFiles.valid(dir);
        SiteConfig config = SiteConfigReader.read(SiteConfigFiles.write(
                dir,
                valid.replace(
                                "gpu_devices = /dev/nvidia0,/dev/nvidia2",
                                "gpu_devices = /dev/nvidia0,/dev/nvidia2\ncpus = 8")
                        .replace("hostname = gpu-n3.cluster", "hostname = gpu-n3.cluster\ncpus = 32")));

        assertEquals(
                List.of("PartitionName=batch Nodes=n[1-3] MaxCPUsPerNode=6 Default=YES MaxTime=INFINITE State=UP"),
                linesStartingWith(RenderedFile.SLURM_CONF.render(config, Optional.empty()), "PartitionName=batch"));
    }

    @Test
    void gresConfListsDeviceFilesAndVgpuCounts() {
        assertEquals(
                List.of(
                        "NodeName=n1 Name=gpu File=/dev/nvidia[0-3]",
                        "NodeName=n1 Name=vgpu Count=8",
                        "NodeName=n2 Name=gpu File=/dev/nvidia0,/dev/nvidia2",
                        "NodeName=n2 Name=vgpu Count=4",
                        "NodeName=n3 Name=gpu File=/dev/nvidia0",
                        "NodeName=n3 Name=vgpu Count=2"),
                linesStartingWith(render(RenderedFile.GRES_CONF), "NodeName="));
    }

    /** Alike nodes share a line: a site of a thousand GPU nodes gets a handful of lines, not a thousand. */
    @Test
    void alikeNodesShareOneLineWrittenAsAHostList() {
        SiteConfig config = SiteConfigReader.read(SiteConfigFiles.write(dir, ranged()));

        assertEquals(
                List.of(
                        "NodeName=gpu[001-128] Gres=gpu:4,vgpu:8 State=UNKNOWN",
                        "NodeName=big[1-2] CPUs=64 Gres=gpu:8,vgpu:16 State=UNKNOWN"),
                linesStartingWith(RenderedFile.SLURM_CONF.render(config, Optional.empty()), "NodeName="));
        assertEquals(
                List.of(
                        "NodeName=gpu[001-128] Name=gpu File=/dev/nvidia[0-3]",
                        "NodeName=gpu[001-128] Name=vgpu Count=8",
                        "NodeName=big[1-2] Name=gpu File=/dev/nvidia[0-7]",
                        "NodeName=big[1-2] Name=vgpu Count=16"),
                linesStartingWith(RenderedFile.GRES_CONF.render(config, Optional.empty()), "NodeName="));
    }

    private String ranged() {
        return """
                [cluster]
                name = site
                tracker = ctl1:7400
                token_key_file = %s
                lend_partition = vgpu-lend
                [node gpu[001-128]]
                gpus = 4
                gpu_memory = 80GiB
                vgpus = 8
                lender_port = 7500
                [node big[1-2]]
                gpus = 8
                gpu_memory = 141GiB
                vgpus = 16
                lender_port = 7500
                cpus = 64
                """.formatted(dir.resolve("site.key"));
    }

    /**
     * The slurm.conf piece defines the lend partition only; GresTypes, JobSubmitPlugins, the nodes' Gres and the job
     * partition are the site's own lines, so the piece says what to add to them, in comments.
     */
    @Test
    void theSlurmConfPieceAddsTheLendPartitionAndNothingTheSiteDefines() {
        SiteConfig config = SiteConfigReader.read(SiteConfigFiles.write(dir, ranged()));
        String piece = RenderedFile.SLURM_CONF_PIECE.render(config, Optional.empty());

        List<String> settings = piece.lines()
                .filter(line -> !line.isBlank() && !line.startsWith("#"))
                .toList();
        assertEquals(
                List.of("PartitionName=vgpu-lend Nodes=gpu[001-128],big[1-2] Hidden=YES"
                        + " PriorityTier=65533 MaxTime=INFINITE State=UP"),
                settings);
        assertTrue(piece.contains("#   Include /etc/slurm/vgpu.slurm.conf\n"), piece);
        assertTrue(piece.contains("#   GresTypes: add vgpu, e.g. GresTypes=gpu,vgpu."), piece);
        assertTrue(piece.contains("#   JobSubmitPlugins: add lua."), piece);
        assertEquals(
                List.of(
                        "#   NodeName=gpu[001-128] ... Gres=gpu:4,vgpu:8",
                        "#   NodeName=big[1-2] ... Gres=gpu:8,vgpu:16"),
                linesStartingWith(piece, "#   NodeName="));
        assertTrue(
                piece.contains("#   the job partition (gpu, [slurm] job_partition), where vgpu jobs run: give it"
                        + " MaxCPUsPerNode=(its nodes' fewest CPUs less GPUs) if its jobs may take every CPU."),
                piece);
        assertFalse(piece.contains("Default=YES"), piece);

        SiteConfig everyCpuKnown = SiteConfigReader.read(SiteConfigFiles.write(
                dir,
                SiteConfigFiles.valid(dir)
                        .replace(
                                "gpu_devices = /dev/nvidia0,/dev/nvidia2",
                                "gpu_devices = /dev/nvidia0,/dev/nvidia2\ncpus = 8")
                        .replace("hostname = gpu-n3.cluster", "hostname = gpu-n3.cluster\ncpus = 32")));
        String known = RenderedFile.SLURM_CONF_PIECE.render(everyCpuKnown, Optional.empty());
        assertTrue(known.contains("give it MaxCPUsPerNode=6."), "n2: 8 CPUs less 2 GPUs: " + known);
    }

    @Test
    void plugstackLoadsTheBridgeRequiredWithTheTrackerAndMunge() {
        String line = "required /opt/vgpu/lib/vgpu_spank.so tracker=127.0.0.1:7400 fallback=local-only"
                + " agent_socket_dir=/run/vgpu lend_partition=vgpu-lend auth=munge";
        assertEquals(List.of(line), linesStartingWith(render(RenderedFile.PLUGSTACK_CONF), "required"));
        String piece = render(RenderedFile.PLUGSTACK_PIECE);
        assertEquals(List.of(line), linesStartingWith(piece, "required"));
        assertTrue(piece.contains("/etc/slurm/plugstack.conf.d/vgpu.conf"), piece);
        assertTrue(piece.contains("`include /etc/slurm/plugstack.conf.d/*.conf`"), piece);
    }

    @Test
    void aTestClusterWithoutMungeSaysSoInEveryFile() {
        SiteConfig config = SiteConfigReader.read(SiteConfigFiles.write(
                dir,
                SiteConfigFiles.valid(dir)
                        .replace(
                                "vgpu_command = /opt/vgpu/bin/vgpu",
                                "vgpu_command = /opt/vgpu/bin/vgpu\nauth = none")));

        assertTrue(linesStartingWith(RenderedFile.PLUGSTACK_PIECE.render(config, Optional.empty()), "required")
                .getFirst()
                .endsWith(" lend_partition=vgpu-lend auth=none"));
        String unit = RenderedFile.TRACKER_UNIT.render(config, Optional.empty());
        assertTrue(linesStartingWith(unit, "ExecStart=").getFirst().endsWith("/holder-%%j.out --auth none"), unit);
        assertTrue(
                unit.contains("# No MUNGE ([slurm] auth = none): the tracker believes whoever reaches its port"), unit);
    }

    @Test
    void mungeOfAnotherSocketAndSlurmUserReachesTheBridgeAndTheTracker() {
        SiteConfig config = SiteConfigReader.read(SiteConfigFiles.write(
                dir,
                SiteConfigFiles.valid(dir)
                        .replace(
                                "vgpu_command = /opt/vgpu/bin/vgpu",
                                "vgpu_command = /opt/vgpu/bin/vgpu\nslurm_user = slurmadm\nmunge_socket = /run/m/s")));

        assertTrue(linesStartingWith(RenderedFile.PLUGSTACK_PIECE.render(config, Optional.empty()), "required")
                .getFirst()
                .endsWith(" auth=munge munge_socket=/run/m/s"));
        assertTrue(linesStartingWith(RenderedFile.TRACKER_UNIT.render(config, Optional.empty()), "ExecStart=")
                .getFirst()
                .endsWith(" --auth munge --trusted-user slurmadm --munge-socket /run/m/s"));
    }

    /** The stand-alone job_submit.lua only calls the module, which holds the rules. */
    @Test
    void jobSubmitLuaIsAWrapperThatCallsTheModule() {
        String lua = render(RenderedFile.JOB_SUBMIT_LUA);

        assertTrue(lua.contains("local vgpu = dofile(here .. \"vgpu_job_submit.lua\")\n"), lua);
        assertTrue(
                lua.contains("function slurm_job_submit(job_desc, part_list, submit_uid)\n"
                        + "   return vgpu.job_submit(job_desc, part_list, submit_uid)\nend\n"),
                lua);
        assertTrue(
                lua.contains("function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)\n"
                        + "   return vgpu.job_modify(job_desc, job_rec, part_list, modify_uid)\nend\n"),
                lua);
        assertFalse(lua.contains("priority"), "no rule of its own: " + lua);
    }

    @Test
    void aSiteThatKeepsRootHoldersKeepsTheLendPartitionRoots() {
        SiteConfig config = SiteConfigReader.read(SiteConfigFiles.write(
                dir,
                SiteConfigFiles.valid(dir)
                        .replace("lend_qos = vgpu-lend\n", "lend_qos = vgpu-lend\nholders_as_borrower = off\n")));

        assertEquals(
                List.of("PartitionName=vgpu-lend Nodes=n[1-3] Hidden=YES AllowGroups=root PriorityTier=65533"
                        + " QOS=vgpu-lend MaxTime=INFINITE State=UP"),
                linesStartingWith(RenderedFile.SLURM_CONF.render(config, Optional.empty()), "PartitionName=vgpu-lend"));
    }

    @Test
    void jobSubmitModuleKeepsTheLendPartitionForRootsSubmissions() {
        String lua = render(RenderedFile.JOB_SUBMIT_MODULE);

        assertTrue(lua.contains("local LEND_PARTITION = \"vgpu-lend\"\n"), lua);
        assertTrue(
                lua.contains("   if names_lend_partition(job_desc.partition) and submit_uid ~= 0 then\n"
                        + "      slurm.log_info("),
                lua);
        assertTrue(lua.contains("   if names_lend_partition(job_desc.partition) and modify_uid ~= 0 then\n"), lua);
        assertTrue(lua.contains("only the tracker\"\n   .. \" (root) submits jobs there"), lua);
    }

    @Test
    void jobSubmitModuleHoldsVgpuJobsAndGuardsTheirReleaseWithoutDefiningSlurmsFunctions() {
        String lua = render(RenderedFile.JOB_SUBMIT_MODULE);

        assertEquals(List.of(), linesStartingWith(lua, "function slurm_"), "the site's script defines those");
        assertTrue(lua.contains("local vgpu = {}\n"), lua);
        assertTrue(lua.endsWith("\nreturn vgpu\n"), lua);
        assertTrue(lua.contains("function vgpu.job_submit(job_desc, part_list, submit_uid)"), lua);
        assertTrue(lua.contains("function vgpu.job_modify(job_desc, job_rec, part_list, modify_uid)"), lua);
        assertTrue(lua.contains("job_desc.priority = 0"), lua);
        assertTrue(lua.contains("vgpu_count(job_desc.tres_per_node)"), lua);
        assertTrue(lua.contains("local MAX_VGPUS_PER_NODE = 8\n"), lua);
        assertTrue(lua.contains("local MAX_GPUS_PER_JOB = 7\n"), "4 local + 3 borrowed, all 7 GPUs: " + lua);
        assertTrue(lua.contains("return slurm.ESLURM_ACCESS_DENIED"), lua);
        assertTrue(lua.contains("127.0.0.1:7400"), lua);
        assertTrue(
                lua.contains(
                        "local HELD_COMMENT = \"vgpu: held until the vgpu tracker (127.0.0.1:7400) secures its GPUs;"
                                + " it has not planned this job yet\"\n"),
                lua);
        assertTrue(lua.contains("      job_desc.comment = HELD_COMMENT\n"), lua);
    }

    /**
     * The vgpu package installs the tracker's unit for /etc/vgpu/vgpu.conf and /usr/bin/vgpu
     * (job-wrapper/packaging/vgpu): its directives are this template's, rendered for that file and launcher.
     */
    @Test
    void thePackagedTrackerUnitIsTheRenderedOneForTheDefaultPaths() throws IOException {
        String rendered = render(RenderedFile.TRACKER_UNIT)
                .replace(dir.resolve("vgpu.conf").toAbsolutePath().toString(), "/etc/vgpu/vgpu.conf")
                .replace(config().slurm().vgpuCommand().toString(), "/usr/bin/vgpu");
        String packaged = Files.readString(Path.of("../job-wrapper/packaging/vgpu/vgpu-tracker.service"));
        assertEquals(directives(rendered), directives(packaged));
        assertTrue(directives(packaged).contains("User=root"), packaged);
    }

    /** A unit's settings: its lines but comments, blank lines and the words for people (Description, Documentation). */
    private static List<String> directives(String unit) {
        return unit.lines()
                .filter(line -> !line.isBlank()
                        && !line.startsWith("#")
                        && !line.startsWith("Description=")
                        && !line.startsWith("Documentation="))
                .toList();
    }

    @Test
    void trackerUnitStartsTheConfiguredLauncherWithThisFileAndMunge() {
        assertEquals(
                List.of("ExecStart=/opt/vgpu/bin/vgpu tracker --config "
                        + dir.resolve("vgpu.conf").toAbsolutePath() + " --ledger /var/lib/vgpu/tracker.ledger"
                        + " --holder-output /var/log/vgpu/holder-%%j.out --auth munge --trusted-user slurm"),
                linesStartingWith(render(RenderedFile.TRACKER_UNIT), "ExecStart="));
        assertEquals(
                List.of("StateDirectory=vgpu"),
                linesStartingWith(render(RenderedFile.TRACKER_UNIT), "StateDirectory="));
    }

    @Test
    void trackerUnitSaysWhereToScrapeMetricsOrHowToTurnThemOn() {
        assertEquals(
                List.of("# Prometheus: /metrics is off; set [tracker] metrics = HOST:PORT in the configuration to serve"
                        + " it, then scrape http://HOST:PORT/metrics"),
                linesStartingWith(render(RenderedFile.TRACKER_UNIT), "# Prometheus"));

        SiteConfig withMetrics = SiteConfigReader.read(
                SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir) + "[tracker]\nmetrics = 10.0.0.9:9464\n"));
        String unit = RenderedFile.TRACKER_UNIT.render(withMetrics, Optional.empty());
        assertTrue(
                unit.contains("# Prometheus: the tracker serves http://10.0.0.9:9464/metrics ([tracker] metrics)"),
                unit);
        assertTrue(unit.contains("#       static_configs: [{targets: ['10.0.0.9:9464']}]\n"), unit);
    }

    @Test
    void lenderUnitListensOnItsNodeAndLendsEachOfItsGpus() {
        SiteConfig config = config();

        assertEquals(
                List.of("ExecStart=/opt/vgpu/bin/vgpu lender --listen 10.0.0.1:7501 --devices 0,1,2,3 --key-file "
                        + dir.resolve("site.key")),
                linesStartingWith(RenderedFile.LENDER_UNIT.render(config, config.node("n1")), "ExecStart="));
        assertEquals(
                List.of("ExecStart=/opt/vgpu/bin/vgpu lender --listen gpu-n3.cluster:7501 --devices 0 --key-file "
                        + dir.resolve("site.key")),
                linesStartingWith(RenderedFile.LENDER_UNIT.render(config, config.node("n3")), "ExecStart="));
    }

    /** The lender reads the site key (root's, mode 600) and opens the GPUs: it says so, as the tracker's unit does. */
    @Test
    void lenderUnitRunsAsRootAndSaysWhyItIsNotHardenedLikeTheTrackers() {
        String unit = RenderedFile.LENDER_UNIT.render(config(), config().node("n1"));
        assertEquals(List.of("User=root"), linesStartingWith(unit, "User="));
        assertTrue(unit.contains("# No hardening options yet"), unit);
    }

    /** The tracker does not use the lender, so its unit says what it is for and that it is optional. */
    @Test
    void lenderUnitSaysTheTrackerDoesNotNeedItAndThatItsPortTakesSignedRequestsOnly() {
        String unit = RenderedFile.LENDER_UNIT.render(config(), config().node("n1"));
        assertTrue(
                unit.contains(
                        "# Not needed to borrow GPUs through the tracker: each holder job runs its own GPU worker."),
                unit);
        assertTrue(unit.contains("whose every request must be signed with the site key"), unit);
    }

    /**
     * A unit names the configuration file in ExecStart, where systemd would split a path at a space and
     * expand $ and %; such a path is refused with what to do, never written into the unit.
     */
    @Test
    void aUnitIsNotRenderedForAConfigurationWhosePathSystemdWouldSplit() throws IOException {
        Path odd = Files.createDirectories(dir.resolve("my $HOME"));
        SiteConfig config = SiteConfigReader.read(SiteConfigFiles.write(odd, SiteConfigFiles.valid(dir)));

        ConfigException refused =
                assertThrows(ConfigException.class, () -> RenderedFile.TRACKER_UNIT.render(config, Optional.empty()));
        assertEquals(
                "vgpu-tracker.service names the configuration file " + odd.resolve("vgpu.conf")
                        + " in its ExecStart, where systemd would split or expand it (' ', '$'); move the file"
                        + " to an absolute path of letters, digits and . _ + - @ / and render again",
                refused.detail());
        assertTrue(
                RenderedFile.LENDER_UNIT.render(config, config.node("n1")).contains(odd.toString()),
                "the lender's unit names it in a comment only");
        assertTrue(
                RenderedFile.SLURM_CONF.render(config, Optional.empty()).contains(odd.toString()),
                "a comment may name it");
    }

    @Test
    void settingsThatWouldSplitAShellWordCannotBeMade() {
        IllegalArgumentException refused = assertThrows(
                IllegalArgumentException.class,
                () -> new SlurmSettings(
                        "gpu",
                        SlurmSettings.DEFAULT_SPANK_PLUGIN,
                        Path.of("/usr/local/bin/vgpu; rm -rf /"),
                        SlurmSettings.DEFAULT_AGENT_SOCKET_DIR));
        assertTrue(
                refused.getMessage().startsWith("vgpu_command: '/usr/local/bin/vgpu; rm -rf ' has a character"),
                refused.getMessage());
    }

    @Test
    void perNodeFilesNeedTheNodeAndOthersRefuseOne() {
        SiteConfig config = config();

        assertThrows(IllegalArgumentException.class, () -> RenderedFile.LENDER_UNIT.render(config, Optional.empty()));
        assertThrows(IllegalArgumentException.class, () -> RenderedFile.GRES_CONF.render(config, config.node("n1")));
        assertEquals(List.of("vgpu-lender.service"), RenderedFile.perNodeFileNames());
    }

    @Test
    void filesAreFoundByName() {
        assertEquals(
                RenderedFile.LENDER_UNIT,
                RenderedFile.byFileName("vgpu-lender.service").orElseThrow());
        assertTrue(RenderedFile.byFileName("slurmdbd.conf").isEmpty());
        assertEquals(RenderedFile.values().length, RenderedFile.fileNames().size());
        assertEquals(
                RenderedFile.PLUGSTACK_PIECE,
                RenderedFile.byFileName("plugstack.conf.d/vgpu.conf").orElseThrow());
    }

    /** Every file says where it goes, and the pieces come first: they are what a site with its own files takes. */
    @Test
    void everyFileSaysWhereItGoesPiecesFirst() {
        for (RenderedFile file : RenderedFile.values()) {
            assertFalse(file.destination().isBlank(), file.fileName());
        }
        List<String> pieces =
                List.of("vgpu.slurm.conf", "plugstack.conf.d/vgpu.conf", "vgpu_job_submit.lua", "gres.conf");
        assertEquals(
                pieces,
                Arrays.stream(RenderedFile.values())
                        .filter(file -> file.kind() == RenderedFile.Kind.PIECE)
                        .map(RenderedFile::fileName)
                        .toList());
        assertEquals(pieces, RenderedFile.fileNames().subList(0, pieces.size()));
    }
}
