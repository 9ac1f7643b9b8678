package org.vgpu.siteconfig;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Where vgpu's pieces are installed, for the Slurm and systemd files rendered from the configuration.
 *
 * @param jobPartition  the partition user jobs (vgpu ones included) run in; rendered as the default partition
 * @param spankPlugin   the SPANK bridge's shared object, as plugstack.conf loads it on every node
 * @param vgpuCommand   the {@code vgpu} launcher the systemd units start
 * @param agentSocketDir where the SPANK bridge makes each vgpu job's directory for its migration agent's
 *     socket (plugstack.conf's {@code agent_socket_dir}; the bridge creates it, root's, mode 0755)
 */
public record SlurmSettings(String jobPartition, Path spankPlugin, Path vgpuCommand, Path agentSocketDir) {
    public static final String DEFAULT_JOB_PARTITION = ConfigKeys.JOB_PARTITION.defaultValue();
    public static final Path DEFAULT_SPANK_PLUGIN = ConfigKeys.SPANK_PLUGIN.defaultValue();
    public static final Path DEFAULT_VGPU_COMMAND = ConfigKeys.VGPU_COMMAND.defaultValue();
    public static final Path DEFAULT_AGENT_SOCKET_DIR = ConfigKeys.AGENT_SOCKET_DIR.defaultValue();

    public SlurmSettings {
        Objects.requireNonNull(jobPartition, "jobPartition");
        Objects.requireNonNull(spankPlugin, "spankPlugin");
        Objects.requireNonNull(vgpuCommand, "vgpuCommand");
        Objects.requireNonNull(agentSocketDir, "agentSocketDir");
        // Written unquoted into plugstack.conf and systemd's ExecStart: a record that exists is safe to render.
        PlainWords.requirePlainPath(ConfigKeys.SPANK_PLUGIN.name(), spankPlugin);
        PlainWords.requirePlainPath(ConfigKeys.VGPU_COMMAND.name(), vgpuCommand);
        PlainWords.requirePlainPath(ConfigKeys.AGENT_SOCKET_DIR.name(), agentSocketDir);
    }
}
