package org.vgpu.migration;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * Where a vGPU can run: a GPU of this node (by index) or a remote GPU worker (host:port). The
 * agent's socket and the CLI write targets as {@code 1} or {@code lender-3:7400}.
 */
public sealed interface MigrationTarget {

    /** GPU {@code index} of the local backend (an emulated device under the CPU emulation). */
    record LocalGpu(int index) implements MigrationTarget {
        public LocalGpu {
            if (index < 0) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_DEVICE, "GPU index must be >= 0, got " + index);
            }
        }

        @Override
        public String toString() {
            return "gpu " + index;
        }
    }

    /** A GPU worker process on a lender node. */
    record RemoteWorker(String host, int port) implements MigrationTarget {
        public RemoteWorker {
            if (host == null || host.isBlank() || !host.matches("[A-Za-z0-9._\\-\\[\\]:]+")) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "worker host '" + host + "' is not a host name or address");
            }
            if (port < 1 || port > 65_535) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "worker port must be in [1, 65535], got " + port);
            }
        }

        @Override
        public String toString() {
            return host.contains(":") ? "[" + host + "]:" + port : host + ":" + port;
        }
    }

    /**
     * Reads a target as written on the socket: a non-negative integer is a local GPU, {@code host:port}
     * (an IPv6 address in brackets) a remote worker; anything else is CUDA_ERROR_INVALID_VALUE.
     */
    static MigrationTarget parse(String text) {
        if (text == null || text.isBlank()) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "empty migration target");
        }
        String target = text.strip();
        if (target.chars().allMatch(Character::isDigit)) {
            return new LocalGpu(parseNumber(target, "GPU index"));
        }
        int colon = target.lastIndexOf(':');
        if (colon <= 0 || colon == target.length() - 1) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "migration target '" + target
                    + "' is neither a local GPU index nor host:port");
        }
        String host = target.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        return new RemoteWorker(host, parseNumber(target.substring(colon + 1), "worker port"));
    }

    private static int parseNumber(String digits, String what) {
        try {
            return Integer.parseInt(digits);
        } catch (NumberFormatException e) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, what + " '" + digits + "' is not a number in range");
        }
    }
}
