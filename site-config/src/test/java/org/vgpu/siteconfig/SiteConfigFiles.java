package org.vgpu.siteconfig;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.vgpu.common.security.SiteKey;

/** Site configuration files for tests: a valid one, and variations written into a directory. */
public final class SiteConfigFiles {
    private SiteConfigFiles() {}

    /** A valid three-node configuration whose token key file lies in {@code dir}. */
    public static String valid(Path dir) {
        return """
                # the test cluster
                [cluster]
                name = testbed
                tracker = 127.0.0.1:7400
                token_key_file = %s
                lend_partition = vgpu-lend
                lend_qos = vgpu-lend

                [policy]
                idle_grace = 45s
                max_borrowed_per_job = 3
                borrowing = on        # off: vgpu jobs wait for local GPUs only
                fallback_local_only = yes

                [slurm]
                job_partition = batch
                spank_plugin = /opt/vgpu/lib/vgpu_spank.so
                vgpu_command = /opt/vgpu/bin/vgpu

                [node n1]
                gpus = 4
                gpu_memory = 80GiB
                vgpus = 8
                lender_port = 7501
                address = 10.0.0.1
                slurmd_port = 6818
                cpus = 64
                real_memory = 512GiB

                [node n2]
                gpus = 2
                gpu_memory = 40GB
                vgpus = 4
                lender_port = 7501
                address = 10.0.0.2
                gpu_devices = /dev/nvidia0,/dev/nvidia2

                [node n3]
                gpus = 1
                gpu_memory = 16GiB
                vgpus = 2
                lender_port = 7501
                hostname = gpu-n3.cluster

                [distance]
                n1 n2 = 1
                n3 n1 = 3
                default = 2
                """.formatted(dir.resolve("site.key"));
    }

    /** Writes {@code text} to {@code dir/vgpu.conf} and a valid private key to {@code dir/site.key} (once). */
    public static Path write(Path dir, String text) {
        try {
            Path key = dir.resolve("site.key");
            if (!Files.exists(key)) {
                SiteKey.generate().writeNewFile(key);
            }
            return Files.writeString(dir.resolve("vgpu.conf"), text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
