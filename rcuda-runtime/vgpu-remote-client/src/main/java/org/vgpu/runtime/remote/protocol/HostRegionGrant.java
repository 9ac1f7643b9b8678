package org.vgpu.runtime.remote.protocol;

import java.util.Objects;

/**
 * The OK of HOST_REGION_CREATE: a region of the worker's shared host memory, made for the client to map.
 *
 * @param id    the region's id in the copies and the free that name it
 * @param path  the file the worker made, which the client maps, checks and unlinks
 * @param nonce the random number in the file's header, which the client checks
 */
public record HostRegionGrant(int id, String path, long nonce) {
    public HostRegionGrant {
        Objects.requireNonNull(path, "path");
    }
}
