package org.vgpu.siteconfig;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

import org.vgpu.common.net.Endpoint;

/**
 * One GPU node of the cluster.
 *
 * @param gpus           physical GPUs, Slurm's {@code gpu} GRES
 * @param gpuMemoryBytes memory of each GPU, for placement (will a borrowed GPU fit the job?)
 * @param vgpus          Slurm's count-only GRES {@code gres/vgpu} on this node: the most vGPUs jobs on it may ask for
 * @param lenderPort     where this node's lender (GPU worker launcher) listens
 * @param gpuDevices     the GPUs' device files in gres.conf's {@code File=} syntax, e.g. {@code /dev/nvidia[0-3]}
 * @param address        Slurm's {@code NodeAddr}, when it differs from the name
 * @param hostname       Slurm's {@code NodeHostname}, when it differs from the name
 * @param slurmdPort     Slurm's {@code Port} for this node's slurmd, when not the cluster's default
 * @param cpus           Slurm's {@code CPUs}, when slurm.conf should state it
 * @param realMemoryBytes Slurm's {@code RealMemory}, when slurm.conf should state it
 */
public record NodeConfig(
        String name,
        int gpus,
        long gpuMemoryBytes,
        int vgpus,
        int lenderPort,
        String gpuDevices,
        Optional<String> address,
        Optional<String> hostname,
        OptionalInt slurmdPort,
        OptionalInt cpus,
        OptionalLong realMemoryBytes) {
    public NodeConfig {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(gpuDevices, "gpuDevices");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(hostname, "hostname");
        Objects.requireNonNull(slurmdPort, "slurmdPort");
        Objects.requireNonNull(cpus, "cpus");
        Objects.requireNonNull(realMemoryBytes, "realMemoryBytes");
        if (gpus < 1 || vgpus < 1 || gpuMemoryBytes < 1) {
            throw new IllegalArgumentException(
                    "node " + name + " needs at least one GPU, one vGPU and some GPU memory");
        }
    }

    /** The default device files of {@code gpus} NVIDIA GPUs: {@code /dev/nvidia[0-(gpus-1)]}. */
    public static String defaultGpuDevices(int gpus) {
        return gpus == 1 ? "/dev/nvidia0" : "/dev/nvidia[0-" + (gpus - 1) + "]";
    }

    /** Where the node is reached: its address, else its host name, else its Slurm name. */
    public String reachableAs() {
        return address.or(() -> hostname).orElse(name);
    }

    /** Where this node's lender listens. */
    public Endpoint lenderEndpoint() {
        return new Endpoint(reachableAs(), lenderPort);
    }
}
