package org.vgpu.runtime.remote.transport;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Whether and where bulk bytes may go through shared memory, on either end, from {@value #PROPERTY}: a directory
 * for the regions (default {@value #DEFAULT_DIRECTORY}), or {@code off} for the frames only. Set on the client it
 * decides whether the client offers shared memory; on the worker, whether and where it creates a region.
 */
public final class SameHostBulk {
    public static final String PROPERTY = "vgpu.bulk.shared-memory";
    static final String DEFAULT_DIRECTORY = "/dev/shm";
    /** Slots per direction of a session's region: enough for the sender to fill some while the receiver empties others. */
    public static final int SLOTS = 8;

    private SameHostBulk() {}

    /** Where this process creates or expects regions; empty when {@value #PROPERTY} is {@code off}. */
    public static Optional<Path> directory() {
        String value = System.getProperty(PROPERTY, DEFAULT_DIRECTORY).strip();
        return value.equalsIgnoreCase("off") ? Optional.empty() : Optional.of(Path.of(value));
    }

    /**
     * Whether {@code host} names this machine: a loopback address or one of its interfaces'. A name that does not
     * resolve is another machine's, as far as the offer goes; the nonce in the region settles it anyway.
     */
    public static boolean isThisHost(String host) {
        try {
            for (InetAddress address : InetAddress.getAllByName(host)) {
                if (address.isLoopbackAddress()
                        || address.isAnyLocalAddress()
                        || NetworkInterface.getByInetAddress(address) != null) {
                    return true;
                }
            }
            return false;
        } catch (UnknownHostException | SocketException e) {
            return false;
        }
    }
}
