package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;

/**
 * The holder's script runs (as root, or as the borrowing user) through {@code /bin/sh}; whatever the values, the worker gets
 * them as its arguments and nothing else runs. Paths the site configuration would refuse are used here on
 * purpose: the script must be safe on its own.
 */
class HolderScriptTest {
    @TempDir
    Path dir;

    @Test
    void hostileValuesReachTheWorkerAsItsArgumentsAndNothingRuns() throws IOException, InterruptedException {
        Path pwned = dir.resolve("pwned");
        Path launcherDir = Files.createDirectories(dir.resolve("it's $(touch " + pwned + ") `touch " + pwned + "`; x"));
        Path launcher = launcherDir.resolve("vgpu");
        // Prints what the worker would get: the device order and the lend's key it inherits, then each argument.
        Files.writeString(launcher, "#!/bin/sh\nprintf '%s\\n' \"$CUDA_DEVICE_ORDER\" \"$VGPU_LEND_KEY\" \"$@\"\n");
        Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwx------"));
        SiteKey site = SiteKey.generate();
        SiteKey lendKey = site.forLend("42", 1);
        HolderScript script = new HolderScript(
                launcher, new Endpoint("tracker.cluster", 7400), "emulated", Duration.ofSeconds(90), true);

        String text = script.forLend("n2", "10.0.0.2", 42, 1, lendKey);
        ProcessBuilder holder = new ProcessBuilder("/bin/sh", "-c", text).directory(dir.toFile());
        holder.environment().put("SLURM_JOB_ID", "77");
        Process process = holder.start();
        String printed = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, process.waitFor(), new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8));

        assertEquals(
                List.of(
                        "PCI_BUS_ID",
                        lendKey.base64(),
                        "worker",
                        "--listen",
                        "10.0.0.2:0",
                        "--backend",
                        "emulated",
                        "--device",
                        "0",
                        "--worker-id",
                        "n2-holder-77",
                        "--key-env",
                        "VGPU_LEND_KEY",
                        "--idle-timeout",
                        "90",
                        "--tracker",
                        "tracker.cluster:7400",
                        "--lend",
                        "42:1",
                        "--tls-self-signed"),
                printed.lines().toList());
        assertFalse(Files.exists(pwned), "nothing in a value ran");
        assertFalse(text.contains(site.base64()), "the holder's script never holds the site key");
    }
}
