package org.vgpu.common.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Base64;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.common.error.ConfigException;

class SiteKeyTest {
    @TempDir
    Path dir;

    @Test
    void aWrittenKeyFileIsPrivateAndLoadsAsTheSameKey() throws IOException {
        SiteKey key = SiteKey.generate();
        Path file = dir.resolve("site.key");
        key.writeNewFile(file);

        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals(key.fingerprint(), SiteKey.load(file).fingerprint());
        assertEquals(1, Files.readAllLines(file).size());
    }

    @Test
    void generatedKeysDifferAndNeverShowInToString() {
        SiteKey one = SiteKey.generate();
        SiteKey other = SiteKey.generate();
        assertNotEquals(one.fingerprint(), other.fingerprint());
        assertEquals(16, one.fingerprint().length());
        assertTrue(one.toString().contains(one.fingerprint()), one.toString());
    }

    @Test
    void toStringDoesNotContainTheKeyFileContent() throws IOException {
        Path file = dir.resolve("site.key");
        SiteKey.generate().writeNewFile(file);
        String encoded = Files.readString(file).strip();
        SiteKey loaded = SiteKey.load(file);
        assertFalse(loaded.toString().contains(encoded.substring(0, 8)), loaded.toString());
    }

    @Test
    void anExistingFileIsNeverOverwritten() throws IOException {
        Path file = dir.resolve("site.key");
        SiteKey.generate().writeNewFile(file);
        String before = Files.readString(file);

        ConfigException refused =
                assertThrows(ConfigException.class, () -> SiteKey.generate().writeNewFile(file));
        assertTrue(refused.getMessage().contains("already exists"), refused.getMessage());
        assertEquals(before, Files.readString(file));
    }

    @Test
    void aMissingFileSaysSoAndHowToCreateOne() {
        Path file = dir.resolve("absent.key");
        ConfigException refused = assertThrows(ConfigException.class, () -> SiteKey.load(file));
        assertEquals(ConfigException.Code.MISSING, refused.code());
        assertTrue(refused.getMessage().contains(file + " does not exist"), refused.getMessage());
        assertTrue(refused.getMessage().contains("/dev/urandom"), refused.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"rw-r-----", "rw----r--", "rw--w----", "r-----rwx", "rw-rw-rw-"})
    void aFileOthersCanAccessIsRefusedWithTheFix(String permissions) throws IOException {
        Path file = privateKeyFile(Base64.getEncoder().encodeToString(new byte[SiteKey.MIN_BYTES]) + "\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString(permissions));

        String message = refusal(file);
        assertTrue(message.contains("accessible by group or others (" + permissions + ")"), message);
        assertTrue(message.contains("chmod 600 " + file), message);
    }

    @Test
    void readOnlyForTheOwnerIsAccepted() throws IOException {
        Path file = privateKeyFile(Base64.getEncoder().encodeToString(new byte[48]));
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--------"));
        assertEquals(16, SiteKey.load(file).fingerprint().length());
    }

    @Test
    void anEmptyFileIsRefused() throws IOException {
        assertTrue(refusal(privateKeyFile("\n  \n")).contains("is empty"));
    }

    @Test
    void aShortKeyIsRefusedWithItsLength() throws IOException {
        String message = refusal(privateKeyFile(Base64.getEncoder().encodeToString(new byte[16]) + "\n"));
        assertTrue(message.contains("16 bytes, at least 32"), message);
    }

    @Test
    void textThatIsNotBase64IsRefused() throws IOException {
        assertTrue(refusal(privateKeyFile("this is not a key!\n")).contains("does not hold base64"));
    }

    @Test
    void moreThanOneLineIsRefused() throws IOException {
        String line = Base64.getEncoder().encodeToString(new byte[SiteKey.MIN_BYTES]);
        assertTrue(refusal(privateKeyFile(line + "\n" + line + "\n")).contains("has 2 lines"));
    }

    @Test
    void aHugeFileIsRefusedUnread() throws IOException {
        assertTrue(refusal(privateKeyFile("A".repeat(10_000))).contains("larger than 4096 bytes"));
    }

    @Test
    void aDirectoryIsRefused() throws IOException {
        Path directory = Files.createDirectory(
                dir.resolve("keys"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        assertTrue(refusal(directory).contains("not a regular file"));
    }

    private Path privateKeyFile(String content) throws IOException {
        Path file = Files.createTempFile(
                dir,
                "site",
                ".key",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(file, content, StandardCharsets.US_ASCII);
        return file;
    }

    private static String refusal(Path file) {
        ConfigException refused = assertThrows(ConfigException.class, () -> SiteKey.load(file));
        assertEquals(ConfigException.Code.INVALID, refused.code(), refused.getMessage());
        assertTrue(refused.getMessage().contains("site key file " + file), refused.getMessage());
        return refused.getMessage();
    }
}
