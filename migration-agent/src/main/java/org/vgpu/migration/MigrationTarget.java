package org.vgpu.migration;

import java.util.regex.Pattern;

import org.vgpu.common.error.InputException;
import org.vgpu.common.net.Endpoint;

/**
 * Where a vGPU can run: a GPU of this node (by index) or a remote GPU worker (host:port). The
 * agent's socket and the CLI write targets as {@code 1} or {@code lender-3:7400}; a target that is
 * not one of those is bad input ({@link InputException}), not a GPU call's failure.
 */
public sealed interface MigrationTarget {

    /** GPU {@code index} of the local backend (an emulated device under the CPU emulation). */
    record LocalGpu(int index) implements MigrationTarget {
        public LocalGpu {
            if (index < 0) {
                throw new InputException("GPU index must be >= 0, got " + index);
            }
        }

        @Override
        public String toString() {
            return "gpu " + index;
        }
    }

    /** A GPU worker process on a lender node. */
    record RemoteWorker(Endpoint endpoint) implements MigrationTarget {
        /** Host names (letters, digits, dots, hyphens, underscores), IPv4 and bracketed IPv6 literals. */
        private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._-]+|[0-9A-Fa-f:.]+");

        public RemoteWorker {
            if (!HOST.matcher(endpoint.host()).matches()) {
                throw new InputException("worker host '" + endpoint.host() + "' is not a host name or IP address");
            }
            if (endpoint.port() == 0 || endpoint.isWildcard()) {
                throw new InputException(
                        "a worker endpoint needs a host one can connect to and a port, got " + endpoint);
            }
        }

        @Override
        public String toString() {
            return endpoint.toString();
        }
    }

    /**
     * Reads a target as written on the socket: a non-negative integer is a local GPU, {@code host:port}
     * (an IPv6 address in brackets) a remote worker; anything else is an {@link InputException}.
     */
    static MigrationTarget parse(String text) {
        if (text == null || text.isBlank()) {
            throw new InputException("empty migration target");
        }
        String target = text.strip();
        if (target.chars().allMatch(Character::isDigit)) {
            return new LocalGpu(parseIndex(target));
        }
        return new RemoteWorker(Endpoint.parse(target));
    }

    private static int parseIndex(String digits) {
        try {
            return Integer.parseInt(digits);
        } catch (NumberFormatException e) {
            throw new InputException("GPU index '" + digits + "' is out of range");
        }
    }
}
