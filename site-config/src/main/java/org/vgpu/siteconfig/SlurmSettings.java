package org.vgpu.siteconfig;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * Where vgpu's pieces are installed, for the Slurm and systemd files rendered from the configuration.
 *
 * @param jobPartition  the partition user jobs (vgpu ones included) run in; rendered as the default partition
 * @param spankPlugin   the SPANK bridge's shared object, as plugstack.conf loads it on every node
 * @param vgpuCommand   the {@code vgpu} launcher the systemd units start
 * @param agentSocketDir where the SPANK bridge makes each vgpu job's directory for its migration agent's
 *     socket (plugstack.conf's {@code agent_socket_dir}; the bridge creates it, root's, mode 0755)
 * @param munge         whether the SPANK bridge and admins sign their requests to the tracker with MUNGE, and the
 *     tracker insists on it ({@code auth}; off, the tracker believes whoever reaches its port)
 * @param slurmUser     Slurm's {@code SlurmUser}, whom the tracker trusts with MUNGE to ask for any job's assembly
 * @param mungeSocket   munged's socket, when it is not libmunge's default (with {@code munge} only)
 */
public record SlurmSettings(
        String jobPartition,
        Path spankPlugin,
        Path vgpuCommand,
        Path agentSocketDir,
        boolean munge,
        String slurmUser,
        Optional<Path> mungeSocket) {
    public static final String DEFAULT_JOB_PARTITION = ConfigKeys.JOB_PARTITION.defaultValue();
    public static final Path DEFAULT_SPANK_PLUGIN = ConfigKeys.SPANK_PLUGIN.defaultValue();
    public static final Path DEFAULT_VGPU_COMMAND = ConfigKeys.VGPU_COMMAND.defaultValue();
    public static final Path DEFAULT_AGENT_SOCKET_DIR = ConfigKeys.AGENT_SOCKET_DIR.defaultValue();
    public static final String DEFAULT_SLURM_USER = ConfigKeys.SLURM_USER.defaultValue();

    public SlurmSettings {
        Objects.requireNonNull(jobPartition, "jobPartition");
        Objects.requireNonNull(spankPlugin, "spankPlugin");
        Objects.requireNonNull(vgpuCommand, "vgpuCommand");
        Objects.requireNonNull(agentSocketDir, "agentSocketDir");
        Objects.requireNonNull(slurmUser, "slurmUser");
        Objects.requireNonNull(mungeSocket, "mungeSocket");
        if (mungeSocket.isPresent() && !munge) {
            throw new IllegalArgumentException("a MUNGE socket without MUNGE authentication");
        }
        // Written unquoted into plugstack.conf and systemd's ExecStart: a record that exists is safe to render.
        PlainWords.requirePlainPath(ConfigKeys.SPANK_PLUGIN.name(), spankPlugin);
        PlainWords.requirePlainPath(ConfigKeys.VGPU_COMMAND.name(), vgpuCommand);
        PlainWords.requirePlainPath(ConfigKeys.AGENT_SOCKET_DIR.name(), agentSocketDir);
        mungeSocket.ifPresent(socket -> PlainWords.requirePlainPath(ConfigKeys.MUNGE_SOCKET.name(), socket));
    }

    /** {@code munge} or {@code none}: the SPANK bridge's {@code auth=} and the tracker's {@code --auth}. */
    public String authWord() {
        return ConfigKeys.MUNGE.format(munge);
    }

    /**
     * Settings of a site that leaves the keys about authentication alone: MUNGE on, {@value #DEFAULT_SLURM_USER}
     * trusted, libmunge's socket.
     */
    public SlurmSettings(String jobPartition, Path spankPlugin, Path vgpuCommand, Path agentSocketDir) {
        this(jobPartition, spankPlugin, vgpuCommand, agentSocketDir, true, DEFAULT_SLURM_USER, Optional.empty());
    }
}
