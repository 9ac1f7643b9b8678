package org.vgpu.siteconfig;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.vgpu.common.net.Endpoint;

class SiteConfigReaderTest {
    @TempDir
    Path dir;

    private SiteConfig read(String text) {
        return SiteConfigReader.read(SiteConfigFiles.write(dir, text));
    }

    private List<ConfigProblem> problems(String text) {
        return assertThrows(SiteConfigException.class, () -> read(text)).problems();
    }

    @Test
    void readsEverySettingOfAValidFile() {
        SiteConfig config = read(SiteConfigFiles.valid(dir));

        assertEquals(dir.resolve("vgpu.conf").toAbsolutePath(), config.source());
        assertEquals("testbed", config.clusterName());
        assertEquals(new Endpoint("127.0.0.1", 7400), config.tracker());
        assertEquals(dir.resolve("site.key"), config.tokenKeyFile());
        assertEquals("vgpu-lend", config.lendPartition());
        assertEquals(Optional.of("vgpu-lend"), config.lendQos());
        assertEquals(new Policy(Duration.ofSeconds(45), 3, true, true), config.policy());
        assertEquals(
                new SlurmSettings(
                        "batch",
                        Path.of("/opt/vgpu/lib/vgpu_spank.so"),
                        Path.of("/opt/vgpu/bin/vgpu"),
                        SlurmSettings.DEFAULT_AGENT_SOCKET_DIR),
                config.slurm());
        assertEquals(
                List.of("n1", "n2", "n3"),
                config.nodes().stream().map(NodeConfig::name).toList());
        assertEquals(
                new NodeConfig(
                        "n1",
                        4,
                        80L << 30,
                        8,
                        7501,
                        "/dev/nvidia[0-3]",
                        Optional.of("10.0.0.1"),
                        Optional.empty(),
                        OptionalInt.of(6818),
                        OptionalInt.of(64),
                        OptionalLong.of(512L << 30)),
                config.nodes().get(0));
        assertEquals(40_000_000_000L, config.nodes().get(1).gpuMemoryBytes());
        assertEquals("/dev/nvidia0,/dev/nvidia2", config.nodes().get(1).gpuDevices());
        assertEquals("gpu-n3.cluster", config.nodes().get(2).reachableAs());
        assertEquals(7, config.totalGpus());
        assertEquals(8, config.maxVgpusPerNode());
        assertEquals(7, config.maxGpusPerJob(), "4 local + 3 borrowed, and the cluster has 7");
    }

    @Test
    void theAgentSocketDirectoryIsTakenAsTheBridgeTakesIt() {
        String valid = SiteConfigFiles.valid(dir);
        String text = valid.replace(
                "vgpu_command = /opt/vgpu/bin/vgpu",
                "vgpu_command = /opt/vgpu/bin/vgpu\nagent_socket_dir = /var/run/vgpu-agents/");

        assertEquals(Path.of("/var/run/vgpu-agents"), read(text).slurm().agentSocketDir());
        assertEquals(
                SlurmSettings.DEFAULT_AGENT_SOCKET_DIR, read(valid).slurm().agentSocketDir(), "the default: /run/vgpu");
    }

    private static final String CLUSTER = """
            [cluster]
            name = c
            tracker = tracker.cluster:7400
            token_key_file = /etc/vgpu/site.key
            lend_partition = lend
            """;

    private static String nodes(String label, int gpus) {
        return """
                [node %s]
                gpus = %d
                gpu_memory = 80GiB
                vgpus = 8
                lender_port = 7500
                """.formatted(label, gpus);
    }

    @Test
    void aNodeSectionOfARangeDescribesEachOfItsNodesAlike() {
        SiteConfig config = read(CLUSTER + nodes("gpu[001-128]", 4) + nodes("big[1,3]", 8) + nodes("login1", 1));

        List<String> names = config.nodes().stream().map(NodeConfig::name).toList();
        assertEquals(131, names.size());
        assertEquals(List.of("gpu001", "gpu002"), names.subList(0, 2));
        assertEquals(List.of("gpu128", "big1", "big3", "login1"), names.subList(127, 131));
        assertEquals(4, config.node("gpu077").orElseThrow().gpus());
        assertEquals(8, config.node("big3").orElseThrow().gpus());
        assertEquals(
                "gpu042", config.node("gpu042").orElseThrow().lenderEndpoint().host());
        assertEquals(1, config.distances().between("gpu001", "big3"), "a range's nodes are in the flat network");
    }

    @Test
    void aMalformedRangeAndNodesDescribedTwiceAreReportedAtTheirLinesWithEveryOtherProblem() {
        Path file = dir.resolve("vgpu.conf").toAbsolutePath();
        List<String> messages = problems(CLUSTER
                        + nodes("gpu[001-128]", 4) // lines 6-10
                        + nodes("gpu[5-3]", 4) // 11-15
                        + nodes("gpu[120-130]", 4) // 16-20
                        + nodes("gpu003", 4) // 21-25
                        + nodes("x[1-3,2]", 4) // 26-30
                        + nodes("y[1-2", 0)) // 31-35, and a bad gpus count
                .stream()
                .map(ConfigProblem::toString)
                .toList();

        assertEquals(
                List.of(
                        file + ":11: node name: 'gpu[5-3]' is not a node range: the range 5-3 runs backwards;"
                                + " expected NAME or NAME[RANGES] as in slurm.conf, e.g. gpu[001-128], gpu[1,3,5-8] or"
                                + " a1,b[2-3]",
                        file + ":16: 9 nodes (gpu120, gpu121, gpu122, gpu123, gpu124, gpu125, gpu126, gpu127, gpu128)"
                                + " are described again (gpu120 first at line 6); node names must be unique",
                        file + ":21: node 'gpu003' is described again (first at line 6); node names must be unique",
                        file + ":26: node 'x2' is named twice in [node x[1-3,2]]; node names must be unique",
                        file + ":31: node name: 'y[1-2' is not a node range: '[' without its ']'; expected NAME or"
                                + " NAME[RANGES] as in slurm.conf, e.g. gpu[001-128], gpu[1,3,5-8] or a1,b[2-3]",
                        file + ":32: gpus: 0 is out of range; expected 1..64"),
                messages);
    }

    @Test
    void nodesOfARangeOnOneAddressClashOnTheirPortOnce() {
        List<ConfigProblem> found = problems(CLUSTER + nodes("g[1-3]", 1) + "address = 10.0.0.9\n");

        assertEquals(1, found.size(), found.toString());
        assertEquals(
                "lender_port 7500 on host 10.0.0.9 is already used at line 10 by another node of [node g[1-3]];"
                        + " each daemon on one host needs its own port",
                found.getFirst().message());
    }

    /** Reading stays linear in the nodes however they are written: 10,000 in one range section. */
    @Test
    @Timeout(10)
    void tenThousandNodesInOneRangeLoad() {
        SiteConfig config = read(CLUSTER + nodes("gpu[00001-10000]", 4) + "[distance]\ndefault = 2\n");

        assertEquals(10_000, config.nodes().size());
        assertEquals(2, config.distances().between("gpu00001", "gpu10000"));
    }

    @Test
    void mungeIsOnUnlessTheFileTurnsItOff() {
        SlurmSettings defaults = read(CLUSTER + nodes("n1", 1)).slurm();
        assertTrue(defaults.munge());
        assertEquals("slurm", defaults.slurmUser());
        assertEquals(Optional.empty(), defaults.mungeSocket());

        SlurmSettings set = read(CLUSTER + "[slurm]\nauth = munge\nslurm_user = slurmadm\n"
                        + "munge_socket = /run/munge/other.socket\n" + nodes("n1", 1))
                .slurm();
        assertEquals("slurmadm", set.slurmUser());
        assertEquals(Optional.of(Path.of("/run/munge/other.socket")), set.mungeSocket());

        assertFalse(read(CLUSTER + "[slurm]\nauth = none\n" + nodes("n1", 1))
                .slurm()
                .munge());
    }

    @Test
    void workerTlsIsOnUnlessTheFileTurnsItOff() {
        assertTrue(read(CLUSTER + nodes("n1", 1)).workerTls());
        assertFalse(read(CLUSTER.replace("[cluster]\n", "[cluster]\nworker_tls = off\n") + nodes("n1", 1))
                .workerTls());
    }

    @Test
    void anUnknownAuthenticationAndASocketWithoutMungeAreRefused() {
        Path file = dir.resolve("vgpu.conf").toAbsolutePath();
        assertEquals(
                List.of(file + ":7: auth: 'kerberos' is no way to authenticate; expected munge or none"),
                problems(CLUSTER + "[slurm]\nauth = kerberos\n" + nodes("n1", 1)).stream()
                        .map(ConfigProblem::toString)
                        .toList());
        assertEquals(
                List.of(file + ":8: munge_socket is set but auth = none; set it with auth = munge only"),
                problems(CLUSTER + "[slurm]\nauth = none\nmunge_socket = /run/m.socket\n" + nodes("n1", 1)).stream()
                        .map(ConfigProblem::toString)
                        .toList());
    }

    @Test
    void distancesAreSymmetricWithDefaultForPairsNotListed() {
        Distances distances = read(SiteConfigFiles.valid(dir)).distances();

        assertEquals(1, distances.between("n2", "n1"));
        assertEquals(3, distances.between("n1", "n3"));
        assertEquals(2, distances.between("n2", "n3"));
        assertEquals(0, distances.between("n2", "n2"));
        assertThrows(IllegalArgumentException.class, () -> distances.between("n1", "n9"));
    }

    @Test
    void omittedSectionsAndKeysTakeDocumentedDefaults() {
        SiteConfig config = read("""
                [cluster]
                name = c
                tracker = tracker.cluster:7400
                token_key_file = /etc/vgpu/site.key
                lend_partition = lend
                [node a]
                gpus = 1
                gpu_memory = 16GiB
                vgpus = 1
                lender_port = 7500
                [node b]
                gpus = 2
                gpu_memory = 16GiB
                vgpus = 4
                lender_port = 7500
                """);

        assertEquals(Policy.defaults(), config.policy());
        assertEquals(
                new SlurmSettings(
                        SlurmSettings.DEFAULT_JOB_PARTITION,
                        SlurmSettings.DEFAULT_SPANK_PLUGIN,
                        SlurmSettings.DEFAULT_VGPU_COMMAND,
                        SlurmSettings.DEFAULT_AGENT_SOCKET_DIR),
                config.slurm());
        assertEquals(Optional.empty(), config.lendQos());
        assertEquals("/dev/nvidia0", config.nodes().get(0).gpuDevices());
        assertEquals("/dev/nvidia[0-1]", config.nodes().get(1).gpuDevices());
        assertEquals(1, config.distances().between("a", "b"), "no [distance] section: a flat network");
        assertEquals(3, config.maxGpusPerJob(), "2 local + 4 borrowed, but the cluster has 3");
        assertEquals(Optional.empty(), config.metrics(), "no [tracker] metrics: the tracker serves no /metrics");
    }

    private static final String SMALL_SITE = """
            [cluster]
            name = c
            tracker = tracker.cluster:7400
            token_key_file = /etc/vgpu/site.key
            lend_partition = lend
            [node a]
            gpus = 1
            gpu_memory = 16GiB
            vgpus = 1
            lender_port = 7500
            """;

    @Test
    void theTrackerServesMetricsWhereTheConfigurationSays() {
        assertEquals(
                Optional.of(new Endpoint("127.0.0.1", 9464)),
                read(SMALL_SITE + "[tracker]\nmetrics = 127.0.0.1:9464\n").metrics());
        assertEquals(
                Optional.of(new Endpoint("0.0.0.0", 9464)),
                read(SMALL_SITE + "[tracker]\nmetrics = 0.0.0.0:9464   # every interface\n")
                        .metrics());
    }

    @Test
    void badMetricsAddressesAreReportedWithTheOtherProblems() {
        List<ConfigProblem> problems = problems(SMALL_SITE.replaceFirst("gpus = 1", "gpus = none")
                + "[tracker]\nmetrics = 127.0.0.1:0\nscrape = yes\n");

        assertEquals(
                List.of(7, 12, 13), problems.stream().map(ConfigProblem::line).toList(), problems.toString());
        assertTrue(problems.get(1).message().contains("metrics: '127.0.0.1:0' has no fixed port"), problems.toString());
        assertTrue(
                problems.get(2).message().contains("unknown key 'scrape' in [tracker]; expected one of metrics"),
                problems.toString());

        List<ConfigProblem> clash = problems(SMALL_SITE + "[tracker]\nmetrics = 0.0.0.0:7400\n");
        assertEquals(1, clash.size(), clash.toString());
        assertTrue(clash.getFirst().message().contains("is where the tracker's socket listens"), clash.toString());
        assertTrue(problems(SMALL_SITE + "[tracker]\nmetrics = nowhere\n")
                .getFirst()
                .message()
                .contains("e.g. 127.0.0.1:9464"));
    }

    @Test
    void theMigrationKeysOfPolicyAreRead() {
        SiteConfig config = read(SiteConfigFiles.valid(dir)
                .replace(
                        "idle_grace = 45s",
                        "idle_grace = 45s\nmigrate_home = off\nmigration_cooldown = 2m\nmigration_end_guard = 90s"
                                + "\nmem_sync_bandwidth = 12GiB/s\nreplay_cost = 250ms"));

        assertEquals(
                new MigrationPolicy(
                        false, Duration.ofMinutes(2), Duration.ofSeconds(90), 12L << 30, Duration.ofMillis(250)),
                config.policy().migration());
    }

    @Test
    void withoutMigrationKeysTheHookMovesHomeWithTheDefaults() {
        SiteConfig config = read(SiteConfigFiles.valid(dir));

        assertEquals(
                new MigrationPolicy(
                        true, Duration.ofMinutes(5), Duration.ofMinutes(5), 10_000_000_000L, Duration.ofSeconds(1)),
                config.policy().migration());
    }

    @Test
    void everyMalformedMigrationKeyIsReportedAtOnce() {
        List<ConfigProblem> problems = problems(SiteConfigFiles.valid(dir)
                .replace(
                        "idle_grace = 45s",
                        "idle_grace = 45s\nmigrate_home = sometimes\nmigration_cooldown = 5 minutes"
                                + "\nmigration_end_guard = -1m\nmem_sync_bandwidth = 10GB\nreplay_cost = 1"));

        List<String> messages = problems.stream().map(ConfigProblem::message).toList();
        assertEquals(
                List.of(11, 12, 13, 14, 15),
                problems.stream().map(ConfigProblem::line).toList(),
                messages.toString());
        assertTrue(
                messages.get(0).contains("migrate_home: 'sometimes' is not a switch; expected on or off"),
                messages.toString());
        assertTrue(messages.get(1).contains("migration_cooldown: '5 minutes' is not a duration"), messages.toString());
        assertTrue(messages.get(2).contains("migration_end_guard: '-1m' is not a duration"), messages.toString());
        assertTrue(
                messages.get(3)
                        .contains("mem_sync_bandwidth: '10GB' is not a bandwidth; expected a size above 0 per"
                                + " second, e.g. 10GB/s"),
                messages.toString());
        assertTrue(messages.get(4).contains("replay_cost: '1' is not a duration"), messages.toString());
    }

    @Test
    void aZeroBandwidthIsRefused() {
        List<ConfigProblem> problems = problems(
                SiteConfigFiles.valid(dir).replace("idle_grace = 45s", "idle_grace = 45s\nmem_sync_bandwidth = 0GB/s"));

        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.get(0).message().contains("'0GB/s' is not a bandwidth"), problems.toString());
    }

    @Test
    void withoutBorrowingAJobGetsOneNodesGpus() {
        SiteConfig config = read(SiteConfigFiles.valid(dir).replace("borrowing = on", "borrowing = off"));

        assertEquals(4, config.maxGpusPerJob());
    }

    /**
     * Distances used to be a complete table of every pair (10,000 nodes: 50 million entries) built
     * through Map.copyOf, which took minutes from 1,000 nodes on. The timeout only keeps a regression from hanging
     * the build; how fast it loads is measured by {@code vgpu config-bench} (docs/config-load.md), not asserted.
     */
    @Test
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void aTenThousandNodeConfigurationLoadsWithEveryDistance() {
        StringBuilder text = new StringBuilder(SMALL_SITE.substring(0, SMALL_SITE.indexOf("[node")));
        StringBuilder distances = new StringBuilder("[distance]\ndefault = 3\n");
        for (int i = 0; i < 10_000; i++) {
            text.append("[node g%05d]\ngpus = 4\ngpu_memory = 80GiB\nvgpus = 8\nlender_port = 7500\n".formatted(i));
            if (i % 2 == 1) {
                distances.append("g%05d g%05d = 1\n".formatted(i - 1, i));
            }
        }
        Distances read = read(text.append(distances).toString()).distances();

        assertEquals(1, read.between("g00000", "g00001"));
        assertEquals(1, read.between("g09999", "g09998"));
        assertEquals(3, read.between("g00001", "g00002"), "not listed: the default");
        assertEquals(3, read.between("g09999", "g00000"));
        assertEquals(0, read.between("g04711", "g04711"));
        assertThrows(IllegalArgumentException.class, () -> read.between("g00000", "g10000"));
    }

    @Test
    void aDistanceTableWithoutDefaultNamesItsFirstMissingPairsAndCountsTheRest() {
        StringBuilder text = new StringBuilder(SMALL_SITE.substring(0, SMALL_SITE.indexOf("[node")));
        for (int i = 0; i < 200; i++) {
            text.append("[node g%03d]\ngpus = 1\ngpu_memory = 16GiB\nvgpus = 1\nlender_port = 7500\n".formatted(i));
        }
        List<ConfigProblem> problems =
                problems(text.append("[distance]\ng000 g001 = 1\n").toString());

        assertEquals(1, problems.size(), problems.toString());
        String message = problems.get(0).message();
        assertTrue(
                message.startsWith("[distance] lacks g000 g002, g000 g003, g000 g004, g000 g005, g000 g006, g000 g007,"
                        + " g000 g008, g000 g009, g000 g010, g000 g011 and 19889 more pairs;"),
                message);
        assertTrue(message.endsWith("'default = DISTANCE' for all pairs not listed"), message);
    }

    /** Two racks and a node apart, as a site would write them; written back as host lists too. */
    @Test
    void distanceEntriesNameNodesByHostListsAsNodeSectionsDo() {
        SiteConfig config = read(CLUSTER + nodes("g[8-11]", 4) + nodes("h1", 4) + """
                [distance]
                g[8-9] g[10-11] = 2
                g[8-9] g[8-9] = 1
                g[10-11] g[10-11] = 1
                h1 g[8-11] = 3
                """);
        Distances distances = config.distances();

        assertEquals(2, distances.between("g8", "g11"));
        assertEquals(2, distances.between("g10", "g9"));
        assertEquals(1, distances.between("g9", "g8"), "within one list: every pair of different nodes");
        assertEquals(1, distances.between("g10", "g11"));
        assertEquals(3, distances.between("g10", "h1"));
        assertEquals(0, distances.between("g9", "g9"));
        assertEquals(2 * 2 + 1 + 1 + 4, distances.listedPairs(), "every pair listed, none twice");
        assertEquals(OptionalInt.empty(), distances.otherPairs(), "complete without a default");

        String written = SiteConfigWriter.settings(config);

        String table = written.substring(written.indexOf("[distance]"));
        assertEquals("""
                [distance]
                g8 g9 = 1
                g[8-11] h1 = 3
                g10 g11 = 1
                g[10-11] g[8-9] = 2
                """, table);
        assertEquals(distances, read(written).distances(), "read back, the same table");
    }

    /** Nodes alike and side by side share a section when written, as a site writes them; read back, the same nodes. */
    @Test
    void nodesAlikeAndSideBySideAreWrittenAsOneSection() {
        SiteConfig config = read(CLUSTER + nodes("g[8-11]", 4) + nodes("h1", 8) + nodes("h2", 8) + nodes("g12", 4));

        String written = SiteConfigWriter.settings(config);

        assertTrue(written.contains("[node g[8-11]]\n"), written);
        assertTrue(written.contains("[node h[1-2]]\n"), written);
        assertTrue(written.contains("[node g12]\n"), written);
        assertEquals(3, written.split("\\[node ", -1).length - 1, written);
        assertEquals(config.nodes(), read(written).nodes(), "read back, the same nodes in the same order");
    }

    /** Alike nodes whose one host list would read back in another order share sections only as far as it reads back. */
    @Test
    void alikeNodesShareASectionOnlyWhereItsHostListKeepsTheirOrder() {
        SiteConfig config = read(CLUSTER + nodes("a1", 4) + nodes("b1", 4) + nodes("a2", 4));

        String written = SiteConfigWriter.settings(config);

        assertTrue(written.contains("[node a1,b1]\n"), written);
        assertTrue(written.contains("[node a2]\n"), written);
        assertEquals(config.nodes(), read(written).nodes(), "read back, the same nodes in the same order");
    }

    @Test
    void everyProblemOfRangedDistanceEntriesIsReportedAtItsLineAtOnce() {
        Path file = dir.resolve("vgpu.conf").toAbsolutePath();
        List<String> messages = problems(CLUSTER
                        + nodes("g[1-8]", 4) // lines 6-10
                        + """
                        [distance]
                        g[1-4] g[5-8] = 2
                        g[1-4] g[5-3] = 1
                        g[1-4] h[1-3] = 1
                        g[3-6] g[7-8] = 2
                        g4 g5 = 3
                        g[1-2] g[1-2] = 0
                        g[2] g2 = 1
                        default = 1
                        """) // 11-19
                .stream()
                .map(ConfigProblem::toString)
                .toList();

        assertEquals(
                List.of(
                        file + ":13: distance: 'g[5-3]' is not a node range: the range 5-3 runs backwards; expected"
                                + " NAME or NAME[RANGES] as in slurm.conf, e.g. gpu[001-128], gpu[1,3,5-8] or"
                                + " a1,b[2-3]",
                        file + ":14: distance to 3 unknown nodes (h1, h2, h3); the nodes are g1, g2, g3, g4, g5, g6,"
                                + " g7, g8",
                        file + ":15: 4 pairs (g3 g7, g3 g8, g4 g7, g4 g8) are given again (g3 g7 first at line 12);"
                                + " distances are symmetric, give each pair once",
                        file + ":16: distance between 'g4' and 'g5' is given again (first at line 12); distances are"
                                + " symmetric, give each pair once",
                        file + ":17: g[1-2] g[1-2]: 0 is out of range; expected 1..1000000",
                        file + ":18: distance from 'g2' to itself; a node is 0 from itself, give pairs of different"
                                + " nodes"),
                messages);
    }

    @Test
    void aDistanceEntryOfMorePairsThanTheTrackerShouldHoldWantsADefault() {
        List<ConfigProblem> found =
                problems(CLUSTER + nodes("n[1-2001]", 4) + "[distance]\nn[1-1001] n[1002-2001] = 2\ndefault = 1\n");

        assertEquals(1, found.size(), found.toString());
        assertEquals(
                "'n[1-1001] n[1002-2001]' lists 1001000 pairs, which take [distance] past the 1000000 pairs it may"
                        + " list; give the most common distance as 'default = DISTANCE' and list the others",
                found.getFirst().message());
    }

    /**
     * Values that reach shell commands (the holder job's script) and systemd's ExecStart lines must be
     * plain words: a path that is a command line, or a name of a megabyte, is refused with what is expected.
     */
    @Test
    void valuesThatWouldReachAShellOrAUnitAreRefusedWithWhatIsExpected() {
        String hostile = SiteConfigFiles.valid(dir)
                .replace("vgpu_command = /opt/vgpu/bin/vgpu", "vgpu_command = /usr/local/bin/vgpu; rm -rf /")
                .replace("spank_plugin = /opt/vgpu/lib/vgpu_spank.so", "spank_plugin = /opt/vgpu/lib/$(id).so")
                .replace("name = testbed", "name = " + "c".repeat(1 << 20))
                .replace("hostname = gpu-n3.cluster", "hostname = " + "h".repeat(300))
                .replace("token_key_file = " + dir.resolve("site.key"), "token_key_file = /etc/vgpu/my key");

        List<String> messages =
                problems(hostile).stream().map(ConfigProblem::toString).toList();

        Path file = dir.resolve("vgpu.conf").toAbsolutePath();
        assertEquals(5, messages.size(), messages.toString());
        assertEquals(
                file + ":3: name: a name of 1048576 characters is too long; expected at most 64 letters, digits,"
                        + " '_', '.', '-'",
                messages.get(0));
        assertEquals(
                file + ":5: token_key_file: '/etc/vgpu/my key' has a character vgpu does not write into shell"
                        + " commands or systemd units (' '); expected an absolute path of letters, digits and . _ + - @ /",
                messages.get(1));
        assertTrue(
                messages.get(2).startsWith(file + ":17: spank_plugin: '/opt/vgpu/lib/$(id).so' has a character"),
                messages.get(2));
        assertTrue(
                messages.get(3)
                        .startsWith(file + ":18: vgpu_command: '/usr/local/bin/vgpu; rm -rf /' has a character"
                                + " vgpu does not write into shell commands or systemd units (';', ' '); expected an absolute"
                                + " path"),
                messages.get(3));
        assertTrue(
                messages.get(4)
                        .startsWith(file + ":43: hostname: a name of 300 characters is too long; expected at"
                                + " most 253"),
                messages.get(4));
    }

    /** A valid file with one line replaced (or, with an empty {@code from}, with a line appended). */
    private static Arguments broken(String description, String from, String to, int line, String expected) {
        return Arguments.of(description, from, to, line, expected);
    }

    static Stream<Arguments> malformedFiles() {
        return Stream.of(
                broken(
                        "tracker host that would end job_submit.lua's string",
                        "tracker = 127.0.0.1:7400",
                        "tracker = x\")os.execute(\"id\")--:7400",
                        4,
                        "does not start with a host name or address"),
                broken(
                        "metrics host with a quote",
                        "[node n1]",
                        "[tracker]\nmetrics = my\"host:9464\n[node n1]",
                        21,
                        "metrics: 'my\"host:9464' does not start with a host name or address"),
                broken(
                        "device files with a space",
                        "gpu_devices = /dev/nvidia0,/dev/nvidia2",
                        "gpu_devices = /dev/nvidia0 Name=mps,/dev/nvidia2",
                        36,
                        "gpu_devices: '/dev/nvidia0 Name=mps,/dev/nvidia2' has a character gres.conf would split at"
                                + " (' ', '='); expected absolute paths of letters, digits and . _ + - @ /"),
                broken(
                        "unknown key",
                        "max_borrowed_per_job = 3",
                        "max_borowed_per_job = 3",
                        11,
                        "unknown key 'max_borowed_per_job' in [policy]; expected one of idle_grace, max_borrowed_per_job"),
                broken(
                        "key set twice",
                        "vgpus = 4",
                        "vgpus = 4\nvgpus = 5",
                        34,
                        "'vgpus' is set again in [node n2] (first at line 33)"),
                broken(
                        "duplicate node",
                        "[node n3]",
                        "[node n1]",
                        38,
                        "node 'n1' is described again (first at line 20)"),
                broken("bad duration", "idle_grace = 45s", "idle_grace = 45", 10, "idle_grace: '45' is not a duration"),
                broken("duration unit unknown", "idle_grace = 45s", "idle_grace = 45 sec", 10, "is not a duration"),
                broken("bad size", "gpu_memory = 80GiB", "gpu_memory = 80", 22, "gpu_memory: '80' is not a size"),
                broken("size unit unknown", "gpu_memory = 80GiB", "gpu_memory = 80 parsecs", 22, "is not a size"),
                broken("zero size", "gpu_memory = 80GiB", "gpu_memory = 0GiB", 22, "is zero"),
                broken(
                        "bad switch",
                        "borrowing = on",
                        "borrowing = maybe",
                        12,
                        "borrowing: 'maybe' is not a switch; expected on or off"),
                broken("gpus out of range", "gpus = 4", "gpus = 0", 21, "gpus: 0 is out of range; expected 1..64"),
                broken("gpus not a number", "gpus = 4", "gpus = four", 21, "gpus: 'four' is not a whole number"),
                broken(
                        "lender port out of range",
                        "lender_port = 7501\naddress = 10.0.0.1",
                        "lender_port = 70000\naddress = 10.0.0.1",
                        24,
                        "lender_port: 70000 is out of range; expected 1..65535"),
                broken(
                        "endpoint without port",
                        "tracker = 127.0.0.1:7400",
                        "tracker = 127.0.0.1",
                        4,
                        "tracker: expected HOST:PORT, got '127.0.0.1', e.g. 127.0.0.1:7400"),
                broken(
                        "endpoint port out of range",
                        "tracker = 127.0.0.1:7400",
                        "tracker = 127.0.0.1:99999",
                        4,
                        "a port must be in [0, 65535], got 99999"),
                broken(
                        "endpoint on any port",
                        "tracker = 127.0.0.1:7400",
                        "tracker = 127.0.0.1:0",
                        4,
                        "is not an address others can connect to"),
                broken(
                        "endpoint on every interface",
                        "tracker = 127.0.0.1:7400",
                        "tracker = 0.0.0.0:7400",
                        4,
                        "is not an address others can connect to"),
                broken(
                        "relative key path",
                        "token_key_file = ",
                        "token_key_file = site.key\n#",
                        5,
                        "is a relative path"),
                broken(
                        "bad partition name",
                        "lend_partition = vgpu-lend",
                        "lend_partition = vgpu lend",
                        6,
                        "is not a valid name"),
                broken(
                        "same partition for jobs and holders",
                        "job_partition = batch",
                        "job_partition = vgpu-lend",
                        16,
                        "job_partition and lend_partition are both 'vgpu-lend'"),
                broken(
                        "device count differs from gpus",
                        "gpu_devices = /dev/nvidia0,/dev/nvidia2",
                        "gpu_devices = /dev/nvidia[0-2]",
                        36,
                        "names 3 device files but gpus = 2"),
                broken(
                        "device list malformed",
                        "gpu_devices = /dev/nvidia0,/dev/nvidia2",
                        "gpu_devices = nvidia[0-1]",
                        36,
                        "is not a device file list"),
                broken(
                        "lender ports clash on one host",
                        "lender_port = 7501\nhostname",
                        "lender_port = 7501\naddress = 10.0.0.2\nhostname",
                        42,
                        "lender_port 7501 on host 10.0.0.2 is already used at line 34"),
                broken(
                        "distance to unknown node",
                        "n1 n2 = 1",
                        "n1 n9 = 1",
                        46,
                        "distance to unknown node 'n9'; the nodes are n1, n2, n3"),
                broken("distance to itself", "n1 n2 = 1", "n1 n1 = 1", 46, "distance from 'n1' to itself"),
                broken(
                        "distance given twice",
                        "n3 n1 = 3",
                        "n3 n1 = 3\nn1 n3 = 4",
                        48,
                        "given again (first at line 47)"),
                broken("distance not a pair", "n1 n2 = 1", "n1 = 1", 46, "'n1' in [distance] is not a pair of nodes"),
                broken("distance zero", "n1 n2 = 1", "n1 n2 = 0", 46, "n1 n2: 0 is out of range; expected 1..1000000"),
                broken("incomplete distances", "default = 2", "# no default", 45, "[distance] lacks n2 n3; add a line"),
                broken(
                        "unknown section",
                        "[slurm]",
                        "[slurmd]",
                        15,
                        "unknown section [slurmd]; expected one of [cluster], [policy]"),
                broken("section repeated", "[slurm]", "[policy]", 15, "[policy] appears again (first at line 9)"),
                broken(
                        "label on a singleton section",
                        "[slurm]",
                        "[slurm main]",
                        15,
                        "[slurm main]: [slurm] takes no label"),
                broken("node without name", "[node n3]", "[node]", 38, "[node] needs the node's Slurm name"),
                broken("malformed header", "[slurm]", "[slurm", 15, "malformed section header '[slurm'"),
                broken(
                        "line without =",
                        "borrowing = on",
                        "borrowing on",
                        12,
                        "'borrowing on' is not a setting; expected key = value"),
                broken("value missing", "borrowing = on", "borrowing =", 12, "'borrowing' has no value after '='"),
                broken("key missing", "borrowing = on", "= on", 12, "setting without a key"),
                broken("required key missing", "vgpus = 2\n", "\n", 38, "[node n3] lacks 'vgpus'"),
                broken(
                        "no CPU left for holders",
                        "cpus = 64",
                        "cpus = 4",
                        27,
                        "cpus: 4 CPUs leave none for user jobs once each of the 4 GPUs keeps one for its holder job"),
                broken(
                        "agent socket directory relative",
                        "vgpu_command = /opt/vgpu/bin/vgpu",
                        "vgpu_command = /opt/vgpu/bin/vgpu\nagent_socket_dir = run/vgpu",
                        19,
                        "'run/vgpu' is a relative path"),
                broken(
                        "agent socket directory with a blank",
                        "vgpu_command = /opt/vgpu/bin/vgpu",
                        "vgpu_command = /opt/vgpu/bin/vgpu\nagent_socket_dir = /var/run/vgpu agents",
                        19,
                        "'/var/run/vgpu agents' cannot hold agent sockets; expected an absolute path of at most 67"),
                broken(
                        "agent socket directory with ..",
                        "vgpu_command = /opt/vgpu/bin/vgpu",
                        "vgpu_command = /opt/vgpu/bin/vgpu\nagent_socket_dir = /var/run/../etc",
                        19,
                        "without . or .. components"),
                broken(
                        "agent socket directory too long",
                        "vgpu_command = /opt/vgpu/bin/vgpu",
                        "vgpu_command = /opt/vgpu/bin/vgpu\nagent_socket_dir = /" + "d".repeat(67),
                        19,
                        "at most 67 letters, digits and '._/-'"),
                broken(
                        "setting before any section",
                        "# the test cluster",
                        "name = early",
                        1,
                        "'name' is outside any section"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformedFiles")
    void malformedFileIsRejectedWithLineAndExpectation(
            String description, String from, String to, int line, String expected) {
        String valid = SiteConfigFiles.valid(dir);
        assertTrue(valid.contains(from), "test setup: '" + from + "' not in the valid file");
        List<ConfigProblem> problems = problems(valid.replaceFirst(Pattern.quote(from), Matcher.quoteReplacement(to)));

        assertTrue(
                problems.stream()
                        .anyMatch(problem ->
                                problem.line() == line && problem.message().contains(expected)),
                "expected line " + line + ": " + expected + "; got " + problems);
        assertTrue(problems.stream()
                .allMatch(problem ->
                        problem.file().equals(dir.resolve("vgpu.conf").toAbsolutePath())));
    }

    @Test
    void everyProblemIsReportedInLineOrder() {
        List<ConfigProblem> problems = problems("""
                [cluster]
                name = c
                tracker = nowhere
                token_key_file = relative/key
                [policy]
                idle_grace = soon
                [node a]
                gpus = many
                """);

        assertEquals(
                List.of(1, 3, 4, 6, 7, 7, 7, 8),
                problems.stream().map(ConfigProblem::line).toList(),
                problems.toString());
        assertTrue(problems.get(0).message().contains("lacks 'lend_partition'"), problems.toString());
    }

    @Test
    void missingSectionsAreNamedWithoutALine() {
        List<ConfigProblem> problems = problems("# nothing here\n");

        assertEquals(2, problems.size(), problems.toString());
        assertEquals(0, problems.get(0).line());
        assertTrue(
                problems.stream().anyMatch(problem -> problem.message().startsWith("no [cluster] section")),
                problems.toString());
        assertTrue(
                problems.stream().anyMatch(problem -> problem.message().startsWith("no [node NAME] section")),
                problems.toString());
    }

    @Test
    void problemPrintsAsFileColonLine() {
        ConfigProblem problem = problems("[cluster]\nname\n").stream()
                .filter(p -> p.line() == 2)
                .findFirst()
                .orElseThrow();

        assertEquals(
                dir.resolve("vgpu.conf").toAbsolutePath() + ":2: 'name' is not a setting; expected key = value",
                problem.toString());
    }

    @Test
    void missingFileIsOneProblem() {
        SiteConfigException e =
                assertThrows(SiteConfigException.class, () -> SiteConfigReader.read(dir.resolve("absent.conf")));

        assertEquals(
                List.of(new ConfigProblem(dir.resolve("absent.conf").toAbsolutePath(), 0, "no such file")),
                e.problems());
    }

    /** An admin's --config /etc/vgpu (the folder) is told so, not "input/output error". */
    @Test
    void aDirectoryIsOneProblemThatSaysSo() {
        SiteConfigException e = assertThrows(SiteConfigException.class, () -> SiteConfigReader.read(dir));

        assertEquals(
                List.of(new ConfigProblem(dir.toAbsolutePath(), 0, "is a directory, not a configuration file")),
                e.problems());
    }

    @Test
    void fileThatIsNotUtf8IsOneProblem() throws Exception {
        Path file = Files.write(dir.resolve("binary.conf"), new byte[] {(byte) 0xff, (byte) 0xfe, 0});

        SiteConfigException e = assertThrows(SiteConfigException.class, () -> SiteConfigReader.read(file));
        assertEquals("is not UTF-8 text", e.problems().getFirst().message());
    }

    @Test
    void checkingFilesLoadsTheTokenKey() {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));

        assertEquals("testbed", SiteConfigReader.readAndCheckFiles(file).clusterName());
    }

    @Test
    void checkingFilesReportsAMissingKeyAtItsLine() throws Exception {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));
        Files.delete(dir.resolve("site.key"));

        assertEquals("testbed", SiteConfigReader.read(file).clusterName(), "reading alone does not look at the key");
        List<ConfigProblem> problems = assertThrows(
                        SiteConfigException.class, () -> SiteConfigReader.readAndCheckFiles(file))
                .problems();
        assertEquals(1, problems.size());
        assertEquals(5, problems.getFirst().line());
        assertTrue(problems.getFirst().message().contains("does not exist; create one with"), problems.toString());
    }

    @Test
    void checkingFilesReportsAKeyOthersCanRead() throws Exception {
        Path file = SiteConfigFiles.write(dir, SiteConfigFiles.valid(dir));
        Files.setPosixFilePermissions(dir.resolve("site.key"), PosixFilePermissions.fromString("rw-r--r--"));

        ConfigProblem problem = assertThrows(SiteConfigException.class, () -> SiteConfigReader.readAndCheckFiles(file))
                .problems()
                .getFirst();
        assertEquals(5, problem.line());
        assertTrue(problem.message().contains("chmod 600"), problem.message());
    }

    @Test
    void exceptionMessageListsEveryProblem() {
        SiteConfigException e = assertThrows(SiteConfigException.class, () -> read("[cluster]\n[node a]\n"));

        assertTrue(e.getMessage().startsWith(e.problems().size() + " problems"), e.getMessage());
        assertEquals("CONFIG_INVALID", e.codeName());
        for (ConfigProblem problem : e.problems()) {
            assertTrue(e.getMessage().contains(problem.toString()));
        }
        assertFalse(e.problems().isEmpty());
    }
}
