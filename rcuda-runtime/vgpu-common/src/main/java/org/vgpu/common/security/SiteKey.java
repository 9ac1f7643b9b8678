package org.vgpu.common.security;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.InputException;
import org.vgpu.common.error.IoReasons;

/**
 * The site's secret: the tracker signs session tokens with it and every GPU worker checks them
 * with it, so only a job the tracker placed can use a borrowed GPU.
 *
 * <p>A key file holds the key base64-encoded on one line and must be readable by its owner only
 * (a key others can read lets them forge tokens). {@link #toString()} shows a fingerprint, never
 * the key, so the key can be logged by accident without leaking.
 */
public final class SiteKey {
    /** 256 bits, the size of HMAC-SHA256's output; a shorter key would be the weakest link. */
    public static final int MIN_BYTES = 32;

    static final String MAC_ALGORITHM = "HmacSHA256";
    /** What a lend's key is derived under: no MAC the site key makes for another purpose starts so. */
    private static final byte[] LEND_KEY_DOMAIN = "vgpu lend key v1\0".getBytes(StandardCharsets.US_ASCII);
    /** A key file is one short line; anything much larger is not a key file. */
    private static final int MAX_FILE_BYTES = 4096;

    private static final Set<PosixFilePermission> GROUP_OR_OTHERS = EnumSet.of(
            PosixFilePermission.GROUP_READ,
            PosixFilePermission.GROUP_WRITE,
            PosixFilePermission.GROUP_EXECUTE,
            PosixFilePermission.OTHERS_READ,
            PosixFilePermission.OTHERS_WRITE,
            PosixFilePermission.OTHERS_EXECUTE);

    private final byte[] key;

    private SiteKey(byte[] key) {
        if (key.length < MIN_BYTES) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    "a site key needs at least " + MIN_BYTES + " bytes, got " + key.length);
        }
        this.key = key.clone();
    }

    /** A new key of {@link #MIN_BYTES} bytes from the system's strong random source. */
    public static SiteKey generate() {
        byte[] bytes = new byte[MIN_BYTES];
        new SecureRandom().nextBytes(bytes);
        return new SiteKey(bytes);
    }

    /**
     * The key of one lend: HMAC-SHA256 under this key of {@link #LEND_KEY_DOMAIN}, then the borrowing job's id (its
     * length, then its ASCII) and the vGPU index. The tracker signs the session tokens of that job's vGPU with it, and
     * hands it, not the site key, to the holder's worker that serves the vGPU: a worker holding it accepts only tokens
     * for that vGPU of that job, and whoever reads it (the borrower, whose job the holder is) can make no token that
     * any other job's worker accepts. The key for another job or vGPU cannot be computed from it.
     *
     * @throws InputException for a job id {@link SessionToken} does not accept
     */
    public SiteKey forLend(String jobId, int vgpuIndex) {
        SessionToken.requireId("job id", jobId);
        byte[] job = jobId.getBytes(StandardCharsets.US_ASCII);
        ByteBuffer identity = ByteBuffer.allocate(LEND_KEY_DOMAIN.length + 4 + job.length + 4)
                .put(LEND_KEY_DOMAIN)
                .putInt(job.length)
                .put(job)
                .putInt(vgpuIndex);
        return new SiteKey(mac(identity.array()));
    }

    /**
     * The key base64-encoded, as a key file holds it: for handing a {@linkplain #forLend lend's key} to its holder's
     * worker, never for logging.
     */
    public String base64() {
        return Base64.getEncoder().encodeToString(key);
    }

    /**
     * The key from its base64 text, as a key file holds it; {@code source} names where the text came from in messages
     * (never the text).
     *
     * @throws ConfigException INVALID when the text is not base64 of at least {@link #MIN_BYTES} bytes
     */
    public static SiteKey fromBase64(String text, String source) {
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(text.strip());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    source + " does not hold a key in base64 (only A-Z, a-z, 0-9, +, / and = padding)");
        }
        if (bytes.length < MIN_BYTES) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    source + " holds a key of " + bytes.length + " bytes, at least " + MIN_BYTES + " are needed");
        }
        return new SiteKey(bytes);
    }

    /**
     * Reads a key file.
     *
     * @throws ConfigException MISSING when the file is missing, UNREADABLE when it cannot be read,
     *         INVALID when it is not a private regular file holding one base64 line
     *         of at least {@link #MIN_BYTES} bytes (each message says what to do)
     */
    public static SiteKey load(Path file) {
        refuseIfNotPrivate(file);
        String content = readSmallFile(file);
        List<String> lines = content.lines()
                .map(String::strip)
                .filter(line -> !line.isEmpty())
                .toList();
        if (lines.isEmpty()) {
            throw invalid(file, "is empty; " + howToCreate(file));
        }
        if (lines.size() > 1) {
            throw invalid(file, "has " + lines.size() + " lines, expected the key base64-encoded on one line");
        }
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(lines.getFirst());
        } catch (IllegalArgumentException e) {
            throw invalid(file, "does not hold base64 (only A-Z, a-z, 0-9, +, / and = padding); " + howToCreate(file));
        }
        if (bytes.length < MIN_BYTES) {
            throw invalid(
                    file,
                    "holds a key of " + bytes.length + " bytes, at least " + MIN_BYTES + " are needed; "
                            + howToCreate(file));
        }
        return new SiteKey(bytes);
    }

    /**
     * Writes this key to a new file that only its owner can read or write. The file is created
     * with those permissions, so the key is never readable by others, not even for a moment.
     *
     * @throws ConfigException when the file exists (a key is never overwritten:
     *         tokens signed with it would stop working) or cannot be written
     */
    public void writeNewFile(Path file) {
        try {
            Files.createFile(
                    file,
                    PosixFilePermissions.asFileAttribute(
                            EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)));
            Files.writeString(file, Base64.getEncoder().encodeToString(key) + "\n", StandardCharsets.US_ASCII);
        } catch (FileAlreadyExistsException e) {
            throw invalid(
                    file, "already exists; a site key is never overwritten, remove it first if you mean to replace it");
        } catch (IOException | UnsupportedOperationException e) {
            throw new ConfigException(
                    ConfigException.Code.UNREADABLE,
                    "site key file " + file + " cannot be written: "
                            + (e instanceof IOException io
                                    ? IoReasons.of(io)
                                    : "the file system has no POSIX permissions"),
                    e);
        }
    }

    /**
     * The first 8 bytes of the key's SHA-256 in hex: lets an admin check that two nodes hold the
     * same key without showing it.
     */
    public String fingerprint() {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(key);
            return HexFormat.of().formatHex(digest, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }

    /** HMAC-SHA256 of {@code data} under this key. */
    byte[] mac(byte[] data) {
        try {
            Mac mac = Mac.getInstance(MAC_ALGORITHM);
            mac.init(new SecretKeySpec(key, MAC_ALGORITHM));
            return mac.doFinal(data);
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("every Java runtime has " + MAC_ALGORITHM, e);
        }
    }

    @Override
    public String toString() {
        return "SiteKey[fingerprint " + fingerprint() + "]";
    }

    private static void refuseIfNotPrivate(Path file) {
        Set<PosixFilePermission> permissions;
        try {
            if (!Files.isRegularFile(file) && Files.exists(file)) {
                throw invalid(file, "is not a regular file");
            }
            permissions = Files.getPosixFilePermissions(file);
        } catch (NoSuchFileException e) {
            throw new ConfigException(
                    ConfigException.Code.MISSING, "site key file " + file + " does not exist; " + howToCreate(file));
        } catch (UnsupportedOperationException e) {
            throw invalid(
                    file,
                    "is on a file system without POSIX permissions, so nobody can tell who may read it;"
                            + " keep the key on a local POSIX file system");
        } catch (IOException e) {
            throw new ConfigException(
                    ConfigException.Code.UNREADABLE,
                    "site key file " + file + " cannot be read: " + IoReasons.of(e),
                    e);
        }
        Set<PosixFilePermission> tooOpen = EnumSet.noneOf(PosixFilePermission.class);
        tooOpen.addAll(permissions);
        tooOpen.retainAll(GROUP_OR_OTHERS);
        if (!tooOpen.isEmpty()) {
            throw invalid(
                    file,
                    "is accessible by group or others (" + PosixFilePermissions.toString(permissions)
                            + "), so they could forge session tokens; fix it with: chmod 600 " + file);
        }
    }

    private static String readSmallFile(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            byte[] head = in.readNBytes(MAX_FILE_BYTES + 1);
            if (head.length > MAX_FILE_BYTES) {
                throw invalid(file, "is larger than " + MAX_FILE_BYTES + " bytes, so it is not a key file");
            }
            return new String(head, StandardCharsets.US_ASCII);
        } catch (NoSuchFileException e) {
            throw new ConfigException(
                    ConfigException.Code.MISSING, "site key file " + file + " does not exist; " + howToCreate(file));
        } catch (IOException e) {
            throw new ConfigException(
                    ConfigException.Code.UNREADABLE,
                    "site key file " + file + " cannot be read: " + IoReasons.of(e),
                    e);
        }
    }

    private static String howToCreate(Path file) {
        return "create one with: (umask 077; head -c " + MIN_BYTES + " /dev/urandom | base64 > " + file + ")";
    }

    private static ConfigException invalid(Path file, String problem) {
        return new ConfigException(ConfigException.Code.INVALID, "site key file " + file + " " + problem);
    }
}
