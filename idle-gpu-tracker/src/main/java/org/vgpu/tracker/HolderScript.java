package org.vgpu.tracker;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

import org.vgpu.common.cli.ShellWords;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;

/**
 * What a holder job runs: the worker that serves its GPU (device 0 of the GPUs Slurm gave it, numbered as
 * nvidia-smi does), listening on its node's address, telling the tracker where. sbatch runs it with
 * {@code /bin/sh}, so every value is one quoted word ({@link ShellWords}): a configuration value or a node name
 * can never become shell syntax ({@code vgpu_command = /usr/local/bin/vgpu; rm -rf /} once ran as root).
 *
 * <p>The worker checks tokens with the key of its one lend ({@link SiteKey#forLend}), which the script puts into its
 * environment ({@value #LEND_KEY_VARIABLE}, read with {@code --key-env}): the holder may run as the borrowing user, who
 * must never read the site key. The script holds a secret, so it goes to sbatch on its standard input, never on a
 * command line that {@code ps} shows everyone; Slurm keeps it readable by the holder's user and root only.
 *
 * @param vgpuCommand the {@code vgpu} launcher on the nodes
 * @param tracker     where the worker announces itself
 * @param backend     the worker's backend ({@code native}; {@code emulated} in tests)
 * @param idleTimeout how long the worker waits for its job's first session
 * @param tls         whether the worker speaks TLS with a fresh self-signed certificate ({@code [cluster] worker_tls})
 */
record HolderScript(Path vgpuCommand, Endpoint tracker, String backend, Duration idleTimeout, boolean tls) {
    HolderScript {
        Objects.requireNonNull(vgpuCommand, "vgpuCommand");
        Objects.requireNonNull(tracker, "tracker");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(idleTimeout, "idleTimeout");
    }

    /** The environment variable the worker reads its lend's key from. */
    static final String LEND_KEY_VARIABLE = "VGPU_LEND_KEY";

    /**
     * The script of the holder that lends a GPU of {@code node} to vGPU {@code vgpu} of {@code job}.
     *
     * @param listenHost where the node's worker listens (its address, else host name, else name)
     * @param lendKey    the key of this lend, {@code SiteKey.forLend(job, vgpu)}
     */
    String forLend(String node, String listenHost, long job, int vgpu, SiteKey lendKey) {
        // The worker id ends in the holder's own job id, which only the shell knows: the one unquoted
        // expansion, of Slurm's variable, in double quotes.
        return "export " + BridgeContract.ENV_CUDA_DEVICE_ORDER + "="
                + ShellWords.quote(BridgeContract.CUDA_DEVICE_ORDER)
                + "; " + LEND_KEY_VARIABLE + "=" + ShellWords.quote(lendKey.base64()) + "; export " + LEND_KEY_VARIABLE
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
                        "--key-env",
                        LEND_KEY_VARIABLE,
                        "--idle-timeout",
                        Long.toString(idleTimeout.toSeconds()),
                        "--tracker",
                        tracker.toString(),
                        "--lend",
                        job + ":" + vgpu))
                + (tls ? " " + ShellWords.quote("--tls-self-signed") : "");
    }
}
