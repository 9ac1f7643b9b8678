package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import com.code_intelligence.jazzer.junit.FuzzTest;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;

/**
 * Fuzz target for the VGPU_* environment parser (docs/fuzzing.md): an input is an environment, one NAME=VALUE per
 * line (as {@code env} prints it). {@link JobAssembly#fromEnvironment} may only give an assembly, none, or a
 * {@link ConfigException} naming what is wrong, which `vgpu run` prints before it exits. An assembly it gives, written
 * as the SPANK bridge writes one ({@link #bridgeEnvironment}), reads back as the same assembly.
 *
 * <p>The writer is the test's own: the only writer of these variables is the bridge (slurm-spank-bridge/src/env.c),
 * the Java side only reads them, so a Java writer in the product would serve nobody. The golden transcripts hold the
 * bridge's writing and this parser to each other (JobAssemblyTest).
 */
class JobEnvironmentFuzzTest {
    @FuzzTest(maxDuration = "1m")
    void environment(byte[] input) {
        Map<String, String> environment = new HashMap<>();
        for (String line : new String(input, StandardCharsets.UTF_8).split("\n")) {
            int equals = line.indexOf('=');
            if (equals > 0) {
                environment.put(line.substring(0, equals), line.substring(equals + 1));
            }
        }
        Optional<JobAssembly> assembly;
        try {
            assembly = JobAssembly.fromEnvironment(environment);
        } catch (ConfigException refused) {
            return; // the product's refusal
        }
        if (assembly.isPresent()) {
            Map<String, String> written = bridgeEnvironment(assembly.get());
            assertEquals(assembly, JobAssembly.fromEnvironment(written), written.toString());
        }
    }

    /** The variables of {@code assembly} as the bridge exports them, and the two the job's own side sets. */
    static Map<String, String> bridgeEnvironment(JobAssembly assembly) {
        Map<String, String> environment = new HashMap<>();
        environment.put(BridgeContract.ENV_COUNT, Integer.toString(assembly.count()));
        environment.put(
                BridgeContract.ENV_ASSEMBLY,
                String.join(
                        ",",
                        assembly.vgpus().stream()
                                .map(vgpu -> vgpu.index() + "="
                                        + switch (vgpu) {
                                            case JobAssembly.Local local ->
                                                BridgeContract.PLACEMENT_LOCAL + local.nodeGpu();
                                            case JobAssembly.Remote remote ->
                                                BridgeContract.PLACEMENT_REMOTE + remote.worker();
                                        })
                                .toList()));
        environment.put(BridgeContract.ENV_LOCAL_GPUS, joined(assembly.localGpus()));
        environment.put(
                BridgeContract.ENV_REMOTE,
                String.join(
                        ",",
                        assembly.vgpus().stream()
                                .filter(JobAssembly.Remote.class::isInstance)
                                .map(JobAssembly.Remote.class::cast)
                                .map(remote -> remote.index() + "@" + remote.worker() + "#" + remote.token())
                                .toList()));
        environment.put(BridgeContract.ENV_WINDOW_BASE, "0x" + Long.toHexString(assembly.windowBase()));
        assembly.agentSocket().ifPresent(socket -> environment.put(BridgeContract.ENV_AGENT_SOCKET, socket.toString()));
        environment.put(BridgeContract.ENV_MIGRATE, assembly.migration().text());
        assembly.node().ifPresent(node -> environment.put(BridgeContract.ENV_NODE, node));
        environment.put(BridgeContract.ENV_SOURCE, assembly.source().text());
        assembly.tracker().ifPresent(tracker -> environment.put(BridgeContract.ENV_TRACKER, tracker));
        assembly.job().ifPresent(job -> environment.put(AssemblyEnvironment.SLURM_JOB_ID, job));
        assembly.expectedRuntime()
                .ifPresent(runtime -> environment.put(BridgeContract.ENV_EXPECTED_RUNTIME, runtime.toSeconds() + "s"));
        return environment;
    }

    private static String joined(List<Integer> gpus) {
        return String.join(",", gpus.stream().map(String::valueOf).toList());
    }
}
