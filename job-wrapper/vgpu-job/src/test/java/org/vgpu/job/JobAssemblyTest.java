package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.net.Endpoint;
import org.vgpu.runtime.api.VaWindow;

/** The SPANK bridge's job environment, read into a {@link JobAssembly}: every good form and every way it can be wrong. */
class JobAssemblyTest {
    static final String TOKEN = "v1.SECRETpayload.SECRETmac";

    /** The bridge's README example, with every variable. */
    static Map<String, String> bridgeExample() {
        Map<String, String> environment = new HashMap<>();
        environment.put("VGPU_COUNT", "3");
        environment.put("VGPU_ASSEMBLY", "0=local:2,1=remote:10.1.0.7:7001,2=local:3");
        environment.put("VGPU_LOCAL_GPUS", "2,3");
        environment.put("CUDA_VISIBLE_DEVICES", "2,3");
        environment.put("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        environment.put("VGPU_REMOTE", "1@10.1.0.7:7001#" + TOKEN);
        environment.put("VGPU_AGENT_SOCKET", "/run/vgpu/vgpu-42-n1.sock");
        environment.put("VGPU_WINDOW_BASE", "0x100000000000");
        environment.put("VGPU_MIGRATE", "auto");
        environment.put("VGPU_NODE", "n1");
        environment.put("VGPU_SOURCE", "tracker");
        environment.put("VGPU_TRACKER", "10.1.0.5:7100");
        environment.put("PATH", "/usr/bin");
        return environment;
    }

    private static JobAssembly parse(Map<String, String> environment) {
        return JobAssembly.fromEnvironment(environment).orElseThrow();
    }

    @Test
    void theBridgesExampleGivesEveryVgpuItsPlaceWindowAndCudaDevice() {
        JobAssembly assembly = parse(bridgeExample());
        assertEquals(
                List.of(
                        new JobAssembly.Local(0, 2),
                        new JobAssembly.Remote(1, new Endpoint("10.1.0.7", 7001), TOKEN),
                        new JobAssembly.Local(2, 3)),
                assembly.vgpus());
        assertEquals(3, assembly.count());
        assertEquals(2, assembly.localCount());
        assertEquals(1, assembly.remoteCount());
        assertEquals(0x1000_0000_0000L, assembly.windowBase());
        assertEquals(new VaWindow(2, 0x1000_0000_0000L + 2 * (256L << 30), 256L << 30), assembly.window(2));
        assertEquals(Optional.of(Path.of("/run/vgpu/vgpu-42-n1.sock")), assembly.agentSocket());
        assertEquals(JobAssembly.Migration.AUTO, assembly.migration());
        assertEquals(Optional.of("n1"), assembly.node());
        assertEquals(JobAssembly.Source.TRACKER, assembly.source());
        assertEquals(Optional.of("10.1.0.5:7100"), assembly.tracker());
        assertEquals(List.of(2, 3), assembly.localGpus());
        assertEquals(
                Optional.of(new JobAssembly.Remote(1, new Endpoint("10.1.0.7", 7001), TOKEN)), assembly.firstRemote());
        assertEquals(Optional.empty(), assembly.job(), "SLURM_JOB_ID is not in the example");
        assertEquals(Optional.of(TOKEN), assembly.tokenFor(1, new Endpoint("10.1.0.7", 7001)));
        assertEquals(Optional.empty(), assembly.tokenFor(1, new Endpoint("10.1.0.7", 7002)));
        assertEquals(Optional.empty(), assembly.tokenFor(0, new Endpoint("10.1.0.7", 7001)));
        assertEquals("2,3", assembly.localGpusText());
    }

    /**
     * The golden transcripts of the checkout: Maven runs this test in job-wrapper/, the GPU machine's
     * JUnit console from the repository's root.
     */
    private static Path transcripts() {
        Path relative = Path.of("slurm-spank-bridge", "contract", "transcripts.txt");
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve(relative))) {
                return dir.resolve(relative);
            }
        }
        throw new AssertionError("no " + relative + " in " + Path.of("").toAbsolutePath() + " or above");
    }

    /**
     * What the bridge exports for the golden transcripts' ok replies (slurm-spank-bridge/contract/transcripts.txt,
     * their "= NAME=VALUE" lines, which the bridge's tests render word for word) reads as the assembly of each reply:
     * the assembled job's, and the same job's after its vGPU 2 moved home while vGPU 1 stays borrowed.
     */
    @Test
    void theEnvironmentOfTheGoldenTranscriptsReadsAsItsAssembly() throws Exception {
        Map<String, Map<String, String>> environments = new HashMap<>();
        String scenario = "";
        for (String line : Files.readAllLines(transcripts())) {
            if (line.startsWith("@ ")) {
                scenario = line.substring(2);
            } else if (line.startsWith("= ")) {
                int equals = line.indexOf('=', 2);
                environments
                        .computeIfAbsent(scenario, ignored -> new HashMap<>())
                        .put(
                                line.substring(2, equals),
                                line.substring(equals + 1).replace("{token}", TOKEN));
            }
        }
        assertEquals(Set.of("assembled", "moved-home"), environments.keySet());
        JobAssembly assembly = parse(environments.get("assembled"));
        assertEquals(
                List.of(
                        new JobAssembly.Local(0, 3),
                        new JobAssembly.Remote(1, new Endpoint("10.0.0.2", 40000), TOKEN),
                        new JobAssembly.Remote(2, new Endpoint("10.0.0.3", 40001), TOKEN)),
                assembly.vgpus());
        assertEquals(VaWindow.DEFAULT_BASE, assembly.windowBase());
        assertEquals(Optional.of(Path.of("/run/vgpu/job-103/vgpu-n1.sock")), assembly.agentSocket());

        JobAssembly movedHome = parse(environments.get("moved-home"));
        assertEquals(
                List.of(
                        new JobAssembly.Local(0, 3),
                        new JobAssembly.Remote(1, new Endpoint("10.0.0.2", 40000), TOKEN),
                        new JobAssembly.Local(2, 0)),
                movedHome.vgpus());
        assertEquals(List.of(3, 0), movedHome.localGpus());
    }

    @Test
    void theTokenIsNeverInTheRecordsText() {
        JobAssembly assembly = parse(bridgeExample());
        assertFalse(assembly.toString().contains("SECRET"), assembly.toString());
        assertTrue(
                assembly.vgpu(1).toString().contains("10.1.0.7:7001"),
                assembly.vgpu(1).toString());
    }

    @Test
    void withoutTheBridgesVariablesItIsNotAVgpuJob() {
        assertEquals(Optional.empty(), JobAssembly.fromEnvironment(Map.of()));
        assertEquals(
                Optional.empty(), JobAssembly.fromEnvironment(Map.of("CUDA_VISIBLE_DEVICES", "0,1", "PATH", "/bin")));
    }

    @Test
    void theUsersRuntimeHintIsReadButDoesNotMakeAVgpuJob() {
        assertEquals(Optional.empty(), JobAssembly.fromEnvironment(Map.of("VGPU_EXPECTED_RUNTIME", "2h")));
        assertEquals(Optional.empty(), parse(bridgeExample()).expectedRuntime());
        assertEquals(Optional.empty(), parse(bridgeExample()).expectedEnd(Instant.EPOCH));

        Map<String, String> environment = bridgeExample();
        environment.put("VGPU_EXPECTED_RUNTIME", "90m");
        JobAssembly hinted = parse(environment);
        assertEquals(Optional.of(Duration.ofMinutes(90)), hinted.expectedRuntime());
        assertEquals(
                Optional.of(Instant.parse("2026-11-25T08:30:01Z")),
                hinted.expectedEnd(Instant.parse("2026-11-25T07:00:01.999Z")),
                "the end is whole seconds");
        assertEquals(
                Optional.of(Duration.ofHours(3)),
                hinted.withExpectedRuntime(Duration.ofHours(3)).expectedRuntime());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "-5m|'-5m' is not a duration",
                "abc|'abc' is not a duration",
                "0|'0' is not a duration",
                "0m|'0m' is not a runtime; expected at least 1 s in whole seconds",
                "366d|'366d' is longer than 365d",
                // found by JobEnvironmentFuzzTest: more milliseconds than a long holds raised ArithmeticException
                "111111111111111100m|'111111111111111100m' is longer than 365d",
            })
    void aBadRuntimeHintIsNamedWithWhatWasExpected(String value, String message) {
        Map<String, String> environment = bridgeExample();
        environment.put("VGPU_EXPECTED_RUNTIME", value);
        ConfigException e = assertThrows(ConfigException.class, () -> JobAssembly.fromEnvironment(environment));
        assertTrue(e.detail().startsWith("VGPU_EXPECTED_RUNTIME: " + message), e.detail());
    }

    @Test
    void anAllRemoteJobSeesNoLocalGpu() {
        Map<String, String> environment = bridgeExample();
        environment.put("VGPU_COUNT", "2");
        environment.put("VGPU_ASSEMBLY", "0=remote:lender-1:7001,1=remote:[fd00::7]:7002");
        environment.put("VGPU_LOCAL_GPUS", "");
        environment.put("CUDA_VISIBLE_DEVICES", "");
        environment.put("VGPU_REMOTE", "1@[fd00::7]:7002#b-token,0@lender-1:7001#a-token");
        JobAssembly assembly = parse(environment);
        assertEquals(
                List.of(
                        new JobAssembly.Remote(0, new Endpoint("lender-1", 7001), "a-token"),
                        new JobAssembly.Remote(1, new Endpoint("fd00::7", 7002), "b-token")),
                assembly.vgpus());
        assertEquals("none", assembly.localGpusText());
    }

    @Test
    void optionalVariablesTakeTheBridgesDefaults() {
        Map<String, String> environment = new HashMap<>(Map.of(
                "VGPU_COUNT", "1", "VGPU_ASSEMBLY", "0=local:0", "VGPU_LOCAL_GPUS", "0", "CUDA_VISIBLE_DEVICES", "0"));
        JobAssembly assembly = parse(environment);
        assertEquals(List.of(new JobAssembly.Local(0, 0)), assembly.vgpus());
        assertEquals(VaWindow.DEFAULT_BASE, assembly.windowBase());
        assertEquals(Optional.empty(), assembly.agentSocket());
        assertEquals(JobAssembly.Migration.AUTO, assembly.migration());
        assertEquals(JobAssembly.Source.TRACKER, assembly.source());
        assertEquals(Optional.empty(), assembly.node());
        assertEquals(Optional.empty(), assembly.tracker());
    }

    @Test
    void theOtherValuesOfTheOptionalVariablesAreRead() {
        Map<String, String> environment = bridgeExample();
        environment.put("VGPU_COUNT", "1");
        environment.put("VGPU_ASSEMBLY", "0=local:5");
        environment.put("VGPU_LOCAL_GPUS", "5");
        environment.put("CUDA_VISIBLE_DEVICES", "5");
        environment.put("VGPU_REMOTE", "");
        environment.put("VGPU_MIGRATE", "never");
        environment.put("VGPU_SOURCE", "local-only-fallback");
        environment.put("VGPU_TRACKER", "unix:/run/vgpu/tracker.sock");
        // the last window ends exactly at the end of the 47-bit user address space
        environment.put("VGPU_WINDOW_BASE", "0x7FC000000000");
        JobAssembly assembly = parse(environment);
        assertEquals(JobAssembly.Migration.NEVER, assembly.migration());
        assertEquals(JobAssembly.Source.LOCAL_ONLY_FALLBACK, assembly.source());
        assertEquals(Optional.of("unix:/run/vgpu/tracker.sock"), assembly.tracker());
        assertEquals(0x7FC0_0000_0000L, assembly.windowBase());
    }

    /**
     * A job may be granted node GPUs after it started, so CUDA may show it every GPU of the node: CUDA_VISIBLE_DEVICES
     * unset, listing more GPUs than the job's, or naming GPUs by UUID; the job's own must be among those listed.
     */
    @ParameterizedTest
    @CsvSource({"(unset)", "'2,3'", "'0,1,2,3'", "'3,2'", "'GPU-8c1e7f0a,GPU-5b1d2e3f'"})
    void cudaMayShowTheJobMoreGpusThanItsOwn(String visible) {
        Map<String, String> environment = bridgeExample();
        if (visible.equals("(unset)")) {
            environment.remove("CUDA_VISIBLE_DEVICES");
        } else {
            environment.put("CUDA_VISIBLE_DEVICES", visible);
        }
        environment.put("SLURM_JOB_ID", "42");
        JobAssembly assembly = parse(environment);
        assertEquals(List.of(2, 3), assembly.localGpus());
        assertEquals(Optional.of("42"), assembly.job());
    }

    /** {@code (unset)} removes the variable from the bridge's example. */
    @ParameterizedTest(name = "{0}={1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "VGPU_COUNT            | (unset)                                             | VGPU_COUNT is not set, but the job's environment has VGPU_ASSEMBLY",
                "VGPU_COUNT            | 0                                                   | VGPU_COUNT must be a whole number from 1 to 64, got '0'",
                "VGPU_COUNT            | 65                                                  | VGPU_COUNT must be a whole number from 1 to 64, got '65'",
                "VGPU_COUNT            | three                                               | VGPU_COUNT must be a whole number from 1 to 64, got 'three'",
                "VGPU_COUNT            | 2                                                   | VGPU_ASSEMBLY has 3 entries but VGPU_COUNT is 2",
                "VGPU_ASSEMBLY         | (unset)                                             | VGPU_ASSEMBLY is not set",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:10.1.0.7:7001,1=local:3          | VGPU_ASSEMBLY names vGPU 1 twice",
                "VGPU_ASSEMBLY         | 1=remote:10.1.0.7:7001,0=local:2,2=local:3          | VGPU_ASSEMBLY must list vGPUs 0 to 2 in index order, but entry 1 is vGPU 1",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:10.1.0.7:7001,3=local:3          | VGPU_ASSEMBLY: vGPU index must be a whole number from 0 to 2 (VGPU_COUNT is 3), got '3'",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:10.1.0.7:7001,2=gpu:3            | VGPU_ASSEMBLY entry for vGPU 2 is neither local nor remote",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:10.1.0.7:7001,2local:3           | VGPU_ASSEMBLY entry without '='",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:10.1.0.7:7001,2=local:03         | VGPU_ASSEMBLY entry for vGPU 2: a GPU index must be a whole number from 0 to 1023 without leading zeros, got '03'",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:10.1.0.7:7001,2=local:1024       | a GPU index must be a whole number from 0 to 1023",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:10.1.0.7,2=local:3               | VGPU_ASSEMBLY entry for vGPU 1: expected HOST:PORT of a GPU worker",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:10.1.0.7:0,2=local:3             | VGPU_ASSEMBLY entry for vGPU 1: expected HOST:PORT of a GPU worker (port 1 to 65535), got '10.1.0.7:0'",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:0.0.0.0:7001,2=local:3           | VGPU_ASSEMBLY entry for vGPU 1: expected HOST:PORT",
                "VGPU_ASSEMBLY         | 0=local:2,1=remote:10.1.0.7:7001,,2=local:3         | VGPU_ASSEMBLY has 4 entries but VGPU_COUNT is 3",
                "VGPU_LOCAL_GPUS       | (unset)                                             | VGPU_LOCAL_GPUS is not set",
                "VGPU_LOCAL_GPUS       | 3,2                                                 | VGPU_LOCAL_GPUS is '3,2' but VGPU_ASSEMBLY places its local vGPUs on GPUs '2,3'",
                "VGPU_LOCAL_GPUS       | 2                                                   | VGPU_LOCAL_GPUS is '2' but VGPU_ASSEMBLY places its local vGPUs on GPUs '2,3'",
                "VGPU_LOCAL_GPUS       | 2,2                                                 | VGPU_LOCAL_GPUS names GPU 2 twice",
                "VGPU_LOCAL_GPUS       | 2,x                                                 | VGPU_LOCAL_GPUS: a GPU index must be a whole number",
                "CUDA_VISIBLE_DEVICES  | 0,1                                                 | CUDA_VISIBLE_DEVICES is '0,1' and does not list GPU 2 of VGPU_LOCAL_GPUS ('2,3'), so CUDA would hide the job's own GPU from it",
                "CUDA_VISIBLE_DEVICES  | 0,2,1                                               | CUDA_VISIBLE_DEVICES is '0,2,1' and does not list GPU 3 of VGPU_LOCAL_GPUS",
                "SLURM_JOB_ID          | 042                                                 | SLURM_JOB_ID must be a Slurm job id from 1 to 4294967295, got '042'",
                "SLURM_JOB_ID          | 4294967296                                          | SLURM_JOB_ID must be a Slurm job id from 1 to 4294967295",
                "SLURM_JOB_ID          | 42.1                                                | SLURM_JOB_ID must be a Slurm job id",
                "VGPU_REMOTE           | (unset)                                             | VGPU_REMOTE has no session token for remote vGPU 1 (10.1.0.7:7001); expected an entry 1@10.1.0.7:7001#TOKEN, and VGPU_REMOTE is not set",
                "VGPU_REMOTE           | ''                                                  | VGPU_REMOTE has no session token for remote vGPU 1 (10.1.0.7:7001)",
                "VGPU_REMOTE           | 1@10.1.0.7:7001                                     | VGPU_REMOTE entry 1 is not K@HOST:PORT#TOKEN",
                "VGPU_REMOTE           | 1:10.1.0.7:7001#SECRET                              | VGPU_REMOTE entry 1 is not K@HOST:PORT#TOKEN",
                "VGPU_REMOTE           | 1@10.1.0.7:7001#SECRET,0@10.1.0.7:7001#SECRET       | VGPU_REMOTE has a token for vGPU 0, which VGPU_ASSEMBLY places on local GPU 2",
                "VGPU_REMOTE           | 1@10.1.0.8:7001#SECRET                              | VGPU_REMOTE gives vGPU 1 the worker 10.1.0.8:7001 but VGPU_ASSEMBLY gives it 10.1.0.7:7001",
                "VGPU_REMOTE           | 1@10.1.0.7:7001#SECRET,1@10.1.0.7:7001#SECRETtoo    | VGPU_REMOTE names vGPU 1 twice",
                "VGPU_REMOTE           | 1@10.1.0.7:7001#SECRET!bad                          | VGPU_REMOTE: the token of vGPU 1 must be 1 to 1024 bytes of [A-Za-z0-9._~+/=-], got 10 bytes that are not (token not shown)",
                "VGPU_REMOTE           | 1@10.1.0.7:7001#                                    | VGPU_REMOTE: the token of vGPU 1 must be 1 to 1024 bytes",
                "VGPU_REMOTE           | 7@10.1.0.7:7001#SECRET                              | VGPU_REMOTE: vGPU index must be a whole number from 0 to 2",
                "VGPU_WINDOW_BASE      | 100000000000                                        | VGPU_WINDOW_BASE must be 0x followed by 1 to 16 hex digits, got '100000000000'",
                "VGPU_WINDOW_BASE      | 0x                                                  | VGPU_WINDOW_BASE must be 0x followed by 1 to 16 hex digits",
                "VGPU_WINDOW_BASE      | 0x0                                                 | VGPU_WINDOW_BASE must be a non-zero multiple of 2 MiB (0x200000), got '0x0'",
                "VGPU_WINDOW_BASE      | 0x100000100000                                      | VGPU_WINDOW_BASE must be a non-zero multiple of 2 MiB",
                "VGPU_WINDOW_BASE      | 0x7fff00000000                                      | VGPU_WINDOW_BASE '0x7fff00000000': 3 windows of 256 GiB from it do not fit below 0x800000000000",
                "VGPU_WINDOW_BASE      | 0xffffffffffe00000                                  | VGPU_WINDOW_BASE '0xffffffffffe00000': 3 windows of 256 GiB from it do not fit",
                "VGPU_AGENT_SOCKET     | run/vgpu.sock                                       | VGPU_AGENT_SOCKET must be an absolute path of at most 107 bytes",
                "VGPU_MIGRATE          | sometimes                                           | VGPU_MIGRATE must be auto or never (from --vgpu-migrate), got 'sometimes'",
                "VGPU_NODE             | n 1                                                 | VGPU_NODE must be a Slurm node name",
                "VGPU_SOURCE           | guess                                               | VGPU_SOURCE must be tracker or local-only-fallback, got 'guess'",
                "VGPU_SOURCE           | local-only-fallback                                 | VGPU_SOURCE is local-only-fallback but VGPU_ASSEMBLY has remote vGPUs [1]",
                "VGPU_TRACKER          | nowhere                                             | VGPU_TRACKER must be HOST:PORT or unix:/ABSOLUTE/PATH, got 'nowhere'",
                "VGPU_TRACKER          | unix:relative.sock                                  | VGPU_TRACKER must be HOST:PORT or unix:/ABSOLUTE/PATH"
            })
    void eachMalformedVariableIsNamedWithWhatWasExpected(String variable, String value, String message) {
        Map<String, String> environment = bridgeExample();
        if (value.equals("(unset)")) {
            environment.remove(variable);
        } else {
            environment.put(variable, value);
        }
        ConfigException e = assertThrows(ConfigException.class, () -> JobAssembly.fromEnvironment(environment));
        assertEquals(ConfigException.Code.INVALID, e.code());
        assertFalse(
                e.getMessage().contains("CUDA_ERROR"), "a configuration error wears a CUDA name: " + e.getMessage());
        assertTrue(e.getMessage().contains(message), e.getMessage());
        assertFalse(e.getMessage().contains("SECRET"), "a token leaked into: " + e.getMessage());
    }

    @Test
    void anAgentSocketPathTooLongForUnixSocketsIsRefused() {
        Map<String, String> environment = bridgeExample();
        environment.put("VGPU_AGENT_SOCKET", "/run/" + "v".repeat(103));
        ConfigException e = assertThrows(ConfigException.class, () -> JobAssembly.fromEnvironment(environment));
        assertTrue(
                e.getMessage().contains("VGPU_AGENT_SOCKET must be an absolute path of at most 107 bytes"),
                e.getMessage());
    }

    @Test
    void aControlCharacterInAValueIsNotEchoed() {
        Map<String, String> environment = bridgeExample();
        environment.put("VGPU_NODE", "n1\u001b[2J");
        ConfigException e = assertThrows(ConfigException.class, () -> JobAssembly.fromEnvironment(environment));
        assertTrue(e.getMessage().contains("got 'n1?[2J'"), e.getMessage());
    }

    @Test
    void aWindowOutsideTheAssemblyIsRefused() {
        ConfigException e =
                assertThrows(ConfigException.class, () -> parse(bridgeExample()).window(3));
        assertTrue(e.getMessage().contains("vGPU 3 is not in this job's assembly of 3"), e.getMessage());
    }
}
