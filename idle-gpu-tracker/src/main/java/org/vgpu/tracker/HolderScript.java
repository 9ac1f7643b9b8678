package org.vgpu.tracker;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

import org.vgpu.common.cli.ShellWords;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.net.Endpoint;

/**
 * What a holder job runs: the worker that serves its GPU (device 0 of the GPUs Slurm gave it, numbered as
 * nvidia-smi does), listening on its node's address, telling the tracker where. sbatch runs it with
 * {@code /bin/sh}, so every value is one quoted word ({@link ShellWords}): a configuration value or a node name
 * can never become shell syntax (issue 21: {@code vgpu_command = /usr/local/bin/vgpu; rm -rf /} ran as root).
 *
 * @param vgpuCommand the {@code vgpu} launcher on the nodes
 * @param keyFile     the site key the worker checks session tokens with
 * @param tracker     where the worker announces itself
 * @param backend     the worker's backend ({@code native}; {@code emulated} in tests)
 * @param idleTimeout how long the worker waits for its job's first session
 * @param tls         whether the worker speaks TLS with a fresh self-signed certificate ({@code [cluster] worker_tls})
 */
record HolderScript(
        Path vgpuCommand, Path keyFile, Endpoint tracker, String backend, Duration idleTimeout, boolean tls) {
    HolderScript {
        Objects.requireNonNull(vgpuCommand, "vgpuCommand");
        Objects.requireNonNull(keyFile, "keyFile");
        Objects.requireNonNull(tracker, "tracker");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(idleTimeout, "idleTimeout");
    }

    /**
     * The script of the holder that lends a GPU of {@code node} to vGPU {@code vgpu} of {@code job}.
     *
     * @param listenHost where the node's worker listens (its address, else host name, else name)
     */
    String forLend(String node, String listenHost, long job, int vgpu) {
        // The worker id ends in the holder's own job id, which only the shell knows: the one unquoted
        // expansion, of Slurm's variable, in double quotes.
        return "export " + BridgeContract.ENV_CUDA_DEVICE_ORDER + "="
                + ShellWords.quote(BridgeContract.CUDA_DEVICE_ORDER)
                + "; exec "
                + ShellWords.command(List.of(
                        vgpuCommand.toString(),
                        "worker",
                        "--listen",
                        new Endpoint(listenHost, 0).toString(),
                        "--backend",
                        backend,
                        "--device",
                        "0",
                        "--worker-id"))
                + " " + ShellWords.quote(node + "-holder-") + "\"$SLURM_JOB_ID\" "
                + ShellWords.command(List.of(
                        "--key-file",
                        keyFile.toString(),
                        "--idle-timeout",
                        Long.toString(idleTimeout.toSeconds()),
                        "--tracker",
                        tracker.toString(),
                        "--lend",
                        job + ":" + vgpu))
                + (tls ? " " + ShellWords.quote("--tls-self-signed") : "");
    }
}
