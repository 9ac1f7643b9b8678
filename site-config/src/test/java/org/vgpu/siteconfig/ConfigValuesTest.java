package org.vgpu.siteconfig;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.common.net.Endpoint;

class ConfigValuesTest {
    // Durations (ConfigValues.duration is Durations.parse) are tested in vgpu-common's DurationsTest.

    @Test
    void sizesTakeBinaryOrDecimalUnits() {
        assertEquals(80L << 30, ConfigValues.bytes("80GiB"));
        assertEquals(80L << 30, ConfigValues.bytes("80 gib"));
        assertEquals(512L << 20, ConfigValues.bytes("512MiB"));
        assertEquals(2L << 40, ConfigValues.bytes("2TiB"));
        assertEquals(40_000_000_000L, ConfigValues.bytes("40GB"));
        assertEquals(4_000L, ConfigValues.bytes("4KB"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"80", "80G", "GiB", "0MiB", "1.5GiB", "99999999999TiB", "-1GiB"})
    void badSizesAreRejected(String value) {
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.bytes(value));
    }

    @Test
    void switchesAreOnOrOff() {
        assertTrue(ConfigValues.onOff("on"));
        assertTrue(ConfigValues.onOff("YES"));
        assertTrue(ConfigValues.onOff("true"));
        assertFalse(ConfigValues.onOff("off"));
        assertFalse(ConfigValues.onOff("No"));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.onOff("1"));
    }

    @Test
    void namesFollowSlurm() {
        assertEquals("gpu-node_01.a", ConfigValues.name("gpu-node_01.a"));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.name("-lead"));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.name("two words"));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.name("a,b"));
    }

    @Test
    void integersAreBounded() {
        assertEquals(4, ConfigValues.integer("4", 1, 64));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ConfigValues.integer("65", 1, 64));
        assertEquals("65 is out of range; expected 1..64", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.integer("4.0", 1, 64));
    }

    @Test
    void pathsMustBeAbsoluteAndAreNormalized() {
        assertEquals(Path.of("/etc/vgpu/site.key"), ConfigValues.absolutePath("/etc/vgpu/../vgpu/site.key"));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.absolutePath("etc/site.key"));
    }

    @Test
    void endpointsNeedHostAndPort() {
        assertEquals(new Endpoint("tracker.cluster", 7400), ConfigValues.endpoint("tracker.cluster:7400"));
        assertEquals(new Endpoint("::1", 7400), ConfigValues.endpoint("[::1]:7400"));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.endpoint("7400"));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.endpoint("host:0"));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.endpoint("[::]:7400"));
        assertThrows(IllegalArgumentException.class, () -> ConfigValues.endpoint("host:port"));
    }

    @Test
    void deviceFileListsAreCounted() {
        assertEquals(4, GpuDeviceFiles.count("/dev/nvidia[0-3]"));
        assertEquals(1, GpuDeviceFiles.count("/dev/nvidia0"));
        assertEquals(4, GpuDeviceFiles.count("/dev/nvidia[0,2-3],/dev/nvidia7"));
        assertEquals(2, GpuDeviceFiles.count("/dev/dri/card[0-1]"));
        assertThrows(IllegalArgumentException.class, () -> GpuDeviceFiles.count("/dev/nvidia[3-0]"));
        assertThrows(IllegalArgumentException.class, () -> GpuDeviceFiles.count("/dev/nvidia[a-b]"));
        assertThrows(IllegalArgumentException.class, () -> GpuDeviceFiles.count("dev/nvidia0"));
        assertThrows(IllegalArgumentException.class, () -> GpuDeviceFiles.count("/dev/nvidia[0-1"));
    }

    @Test
    void durationsAndSizesPrintInTheFilesSyntax() {
        assertEquals("500ms", ConfigValues.formatDuration(Duration.ofMillis(500)));
        assertEquals("0s", ConfigValues.formatDuration(Duration.ZERO));
        assertEquals("90s", ConfigValues.formatDuration(Duration.ofSeconds(90)));
        assertEquals("5m", ConfigValues.formatDuration(Duration.ofMinutes(5)));
        assertEquals("2h", ConfigValues.formatDuration(Duration.ofHours(2)));
        assertEquals("1d", ConfigValues.formatDuration(Duration.ofDays(1)));
        assertEquals(
                "200000000000d",
                ConfigValues.formatDuration(Duration.ofDays(200_000_000_000L)),
                "more milliseconds than a long holds, as a file may write it");
        assertEquals("80 GiB", ConfigValues.formatBytes(80L << 30));
        assertEquals("1536 MiB", ConfigValues.formatBytes(1536L << 20));
        assertEquals("1 KB", ConfigValues.formatBytes(1000));
        assertEquals("1001 B", ConfigValues.formatBytes(1001));
    }
}
