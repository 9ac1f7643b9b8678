package org.vgpu.common.security;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Comparator;
import java.util.stream.Stream;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.IoReasons;

/**
 * A fresh site key in its own temporary directory, with an issuer for it, for processes that start
 * their own GPU workers (benchmarks, tests) and so play tracker and lender at once. Closing it
 * removes the directory and everything in it.
 */
public final class ThrowawaySiteKey implements AutoCloseable {
    private final Path directory;
    private final Path keyFile;
    private final SiteKey key;
    private final TokenIssuer issuer;

    private ThrowawaySiteKey(Path directory, Path keyFile, SiteKey key) {
        this.directory = directory;
        this.keyFile = keyFile;
        this.key = key;
        this.issuer = new TokenIssuer(key, Clock.systemUTC());
    }

    /** Generates a key and writes it (mode 600) into a new temporary directory named after {@code prefix}. */
    public static ThrowawaySiteKey create(String prefix) {
        Path directory;
        try {
            directory = Files.createTempDirectory(prefix);
        } catch (IOException e) {
            throw new ConfigException(
                    ConfigException.Code.UNREADABLE,
                    "cannot create a directory for a throwaway" + " site key in " + System.getProperty("java.io.tmpdir")
                            + ": " + IoReasons.of(e),
                    e);
        }
        Path keyFile = directory.resolve("site.key");
        SiteKey key = SiteKey.generate();
        key.writeNewFile(keyFile);
        return new ThrowawaySiteKey(directory, keyFile, key);
    }

    /** The key file, for workers' {@code --key-file}. */
    public Path keyFile() {
        return keyFile;
    }

    public TokenIssuer issuer() {
        return issuer;
    }

    /** An issuer with the key of vGPU {@code vgpu} of job {@code job}'s lend, as a tracker signs that lend's tokens. */
    public TokenIssuer lendIssuer(String job, int vgpu) {
        return new TokenIssuer(key.forLend(job, vgpu), Clock.systemUTC());
    }

    @Override
    public void close() {
        try (Stream<Path> files = Files.walk(directory)) {
            for (Path path : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        } catch (IOException e) {
            throw new ConfigException(
                    ConfigException.Code.UNREADABLE,
                    "cannot remove the throwaway site key in " + directory + ": " + IoReasons.of(e),
                    e);
        }
    }
}
