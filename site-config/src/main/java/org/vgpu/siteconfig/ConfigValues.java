package org.vgpu.siteconfig;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.vgpu.common.cli.Durations;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.InputException;
import org.vgpu.common.net.Endpoint;

/**
 * The syntax of a site configuration's values: parsers for the reader and formatters that write a value as a file
 * would. Each parser throws {@link IllegalArgumentException} whose message says what was expected, so the reader can
 * put it next to the file and line; what a formatter writes, the parser reads back to the same value.
 */
public final class ConfigValues {
    /** Node, partition, QOS and cluster names as Slurm accepts them without quoting. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]*");
    /**
     * Names end up in Slurm's files, systemd units, logs and ledger records; Slurm's own limit on most names is
     * 64 bytes or less, and a megabyte of name must not get that far.
     */
    private static final int MAX_NAME_LENGTH = 64;
    /** DNS's limit on a whole host name. */
    private static final int MAX_HOST_LENGTH = 253;
    /** An IPv6 literal (written in brackets in HOST:PORT). */
    private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]{2,45}");

    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([A-Za-z]*)");
    /** The size units as sizes are written; read in any case. */
    private static final Map<String, Long> SIZE_UNITS = Map.of(
            "KiB",
            1L << 10,
            "MiB",
            1L << 20,
            "GiB",
            1L << 30,
            "TiB",
            1L << 40,
            "KB",
            1_000L,
            "MB",
            1_000_000L,
            "GB",
            1_000_000_000L,
            "TB",
            1_000_000_000_000L);

    private static final Map<String, Long> SIZE_UNITS_IN_LOWER_CASE = SIZE_UNITS.entrySet().stream()
            .collect(Collectors.toUnmodifiableMap(unit -> unit.getKey().toLowerCase(Locale.ROOT), Map.Entry::getValue));
    private static final long SECONDS_PER_MINUTE = 60;
    private static final long SECONDS_PER_HOUR = 3600;
    private static final long SECONDS_PER_DAY = 86400;

    private ConfigValues() {}

    static String name(String value) {
        return name(value, MAX_NAME_LENGTH);
    }

    /** A host name or address ({@code address}, {@code hostname}): a name as long as DNS allows. */
    static String host(String value) {
        return name(value, MAX_HOST_LENGTH);
    }

    private static String name(String value, int maxLength) {
        if (value.length() > maxLength) {
            throw new IllegalArgumentException("a name of " + value.length() + " characters is too long; expected"
                    + " at most " + maxLength + " letters, digits, '_', '.', '-'");
        }
        if (!NAME.matcher(value).matches()) {
            throw new IllegalArgumentException("'" + value + "' is not a valid name;"
                    + " expected letters, digits, '_', '.', '-' (starting with a letter or digit)");
        }
        return value;
    }

    static int integer(String value, int min, int max) {
        int parsed;
        try {
            parsed = Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + value + "' is not a whole number; expected " + min + ".." + max);
        }
        if (parsed < min || parsed > max) {
            throw new IllegalArgumentException(parsed + " is out of range; expected " + min + ".." + max);
        }
        return parsed;
    }

    static boolean onOff(String value) {
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "on", "yes", "true" -> true;
            case "off", "no", "false" -> false;
            default -> throw new IllegalArgumentException("'" + value + "' is not a switch; expected on or off");
        };
    }

    /** A duration with a unit: {@code 500ms}, {@code 30s}, {@code 5m}, {@code 2h}, {@code 1d} (see {@link Durations}). */
    static Duration duration(String value) {
        return Durations.parse(value);
    }

    /** A byte size with a unit: binary {@code KiB MiB GiB TiB} or decimal {@code KB MB GB TB}. */
    static long bytes(String value) {
        Matcher matcher = SIZE.matcher(value);
        Long unit = matcher.matches()
                ? SIZE_UNITS_IN_LOWER_CASE.get(matcher.group(2).toLowerCase(Locale.ROOT))
                : null;
        if (unit == null) {
            throw new IllegalArgumentException("'" + value + "' is not a size; expected a whole number with a unit"
                    + " KiB, MiB, GiB, TiB (or KB, MB, GB, TB), e.g. 80GiB");
        }
        try {
            long amount = Long.parseLong(matcher.group(1));
            if (amount == 0) {
                throw new IllegalArgumentException("'" + value + "' is zero; expected a size above 0");
            }
            return Math.multiplyExact(amount, unit);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("'" + value + "' is too large a size");
        }
    }

    /**
     * A duration as {@link #duration} reads it, in the largest unit that shows it exactly. Whole seconds are counted
     * as such, so a duration of more milliseconds than a long holds (a file may say {@code 200000000000d}) is written
     * too.
     */
    public static String formatDuration(Duration duration) {
        if (duration.getNano() != 0) {
            return duration.toMillis() + "ms";
        }
        long seconds = duration.getSeconds();
        if (seconds % SECONDS_PER_DAY == 0 && seconds > 0) {
            return seconds / SECONDS_PER_DAY + "d";
        }
        if (seconds % SECONDS_PER_HOUR == 0 && seconds > 0) {
            return seconds / SECONDS_PER_HOUR + "h";
        }
        if (seconds % SECONDS_PER_MINUTE == 0 && seconds > 0) {
            return seconds / SECONDS_PER_MINUTE + "m";
        }
        return seconds + "s";
    }

    /** A size as {@link #bytes} reads it, in the largest unit, binary or decimal, that shows it exactly. */
    public static String formatBytes(long bytes) {
        return SIZE_UNITS.entrySet().stream()
                .filter(unit -> bytes > 0 && bytes % unit.getValue() == 0)
                .max(Map.Entry.comparingByValue())
                .map(unit -> bytes / unit.getValue() + " " + unit.getKey())
                .orElse(bytes + " B");
    }

    /** A byte rate as {@link #bandwidth} reads it. */
    static String formatBandwidth(long bytesPerSecond) {
        return formatBytes(bytesPerSecond) + "/s";
    }

    /**
     * How the tracker authenticates the SPANK bridge's and admins' requests, in the bridge's words: {@code munge}
     * (true) or {@code none} (false).
     */
    static boolean munge(String value) {
        if (value.equals(BridgeContract.AUTH_MUNGE_WORD)) {
            return true;
        }
        if (value.equals(BridgeContract.AUTH_NONE_WORD)) {
            return false;
        }
        throw new IllegalArgumentException("'" + value + "' is no way to authenticate; expected "
                + BridgeContract.AUTH_MUNGE_WORD + " or " + BridgeContract.AUTH_NONE_WORD);
    }

    static String formatMunge(boolean munge) {
        return munge ? BridgeContract.AUTH_MUNGE_WORD : BridgeContract.AUTH_NONE_WORD;
    }

    static String formatSwitch(boolean on) {
        return on ? "on" : "off";
    }

    /** A byte rate: a size as {@link #bytes} followed by {@code /s}, e.g. {@code 10GB/s}; bytes per second. */
    static long bandwidth(String value) {
        String perSecond = "/s";
        try {
            if (value.endsWith(perSecond)) {
                return bytes(
                        value.substring(0, value.length() - perSecond.length()).strip());
            }
        } catch (IllegalArgumentException e) {
            // The size's own message would suggest a size without "/s": say what a bandwidth looks like instead.
        }
        throw new IllegalArgumentException(
                "'" + value + "' is not a bandwidth; expected a size above 0 per second," + " e.g. 10GB/s or 12GiB/s");
    }

    /** {@code host:port} with a fixed port: daemons on other machines must know where to connect. */
    static Endpoint endpoint(String value) {
        Endpoint endpoint;
        try {
            endpoint = Endpoint.parse(value);
        } catch (InputException e) {
            throw new IllegalArgumentException(e.getMessage() + ", e.g. 127.0.0.1:7400 or tracker.cluster:7400");
        }
        requireHostName(value, endpoint);
        if (endpoint.port() == 0 || endpoint.isWildcard()) {
            throw new IllegalArgumentException("'" + value + "' is not an address others can connect to;"
                    + " expected a host name or address and a fixed port, e.g. tracker.cluster:7400");
        }
        return endpoint;
    }

    /** An address to listen on: a host (or a wildcard such as 0.0.0.0, every interface) and a fixed port. */
    static Endpoint listenAddress(String value) {
        Endpoint endpoint;
        try {
            endpoint = Endpoint.parse(value);
        } catch (InputException e) {
            throw new IllegalArgumentException(e.getMessage() + ", e.g. 127.0.0.1:9464");
        }
        requireHostName(value, endpoint);
        if (endpoint.port() == 0) {
            throw new IllegalArgumentException(
                    "'" + value + "' has no fixed port; expected one Prometheus can be told, e.g. 127.0.0.1:9464");
        }
        return endpoint;
    }

    /**
     * The host of an endpoint lands in plugstack.conf, job_submit.lua's strings and the holder's command line:
     * a name or an address, nothing that could end a word or a string there.
     */
    private static void requireHostName(String value, Endpoint endpoint) {
        String host = endpoint.host();
        boolean valid = host.contains(":")
                ? IPV6.matcher(host).matches()
                : host.length() <= MAX_HOST_LENGTH && NAME.matcher(host).matches();
        if (!valid) {
            throw new IllegalArgumentException("'" + value + "' does not start with a host name or address; expected"
                    + " letters, digits, '_', '.', '-' (an IPv6 address in brackets), e.g. tracker.cluster:7400");
        }
    }

    /** An absolute path vgpu may write unquoted: see {@link PlainWords}. */
    static Path absolutePath(String value) {
        Path path = absolute(value);
        PlainWords.pathProblem(value).ifPresent(problem -> {
            throw new IllegalArgumentException(problem);
        });
        return path;
    }

    private static Path absolute(String value) {
        Path path;
        try {
            path = Path.of(value);
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException("'" + value + "' is not a path this system can use");
        }
        if (!path.isAbsolute()) {
            throw new IllegalArgumentException("'" + value + "' is a relative path; expected an absolute path,"
                    + " because daemons do not start in the directory the file was written in");
        }
        return path.normalize();
    }

    /**
     * The SPANK bridge's agent_socket_dir, as its plugstack.conf parser accepts it: absolute, at most
     * {@link BridgeContract#AGENT_SOCKET_DIR_BYTES} bytes of letters, digits and
     * {@link BridgeContract#SOCKET_PATH_CHARS}, no {@code .} or {@code ..} component.
     */
    static Path agentSocketDir(String value) {
        // Its own, narrower character set (the bridge's) says what is expected; it is plain as well.
        Path path = absolute(value);
        boolean dots = Arrays.stream(value.split("/")).anyMatch(part -> part.equals(".") || part.equals(".."));
        if (dots
                || !value.matches(BridgeContract.SOCKET_PATH_CHAR_CLASS + "+")
                || value.length() > BridgeContract.AGENT_SOCKET_DIR_BYTES) {
            throw new IllegalArgumentException("'" + value + "' cannot hold agent sockets; expected an absolute path of"
                    + " at most " + BridgeContract.AGENT_SOCKET_DIR_BYTES + " letters, digits and '"
                    + BridgeContract.SOCKET_PATH_CHARS + "', without . or .. components, e.g. /run/vgpu");
        }
        return path;
    }
}
