package org.vgpu.runtime.remote.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What a client offers: by default stripes to a worker on another host and none to one on its own (which takes shared
 * memory); {@code off} none, {@code always} stripes to both; a mode it does not know is refused by name.
 */
class StripedBulkTest {
    @AfterEach
    void clearProperties() {
        System.clearProperty(StripedBulk.MODE_PROPERTY);
        System.clearProperty(StripedBulk.PROPERTY);
    }

    @Test
    void byDefaultAClientStripesToAWorkerOnAnotherHostOnly() {
        System.clearProperty(StripedBulk.MODE_PROPERTY);
        assertEquals(StripedBulk.DEFAULT_STRIPES, StripedBulk.offeredTo(false));
        assertEquals(0, StripedBulk.offeredTo(true));
    }

    @Test
    void offAndAlwaysAndTheCountSayTheRest() {
        System.setProperty(StripedBulk.MODE_PROPERTY, "off");
        assertEquals(0, StripedBulk.offeredTo(false));
        System.setProperty(StripedBulk.MODE_PROPERTY, " Always ");
        System.setProperty(StripedBulk.PROPERTY, "4");
        assertEquals(4, StripedBulk.offeredTo(true));
        assertEquals(4, StripedBulk.offeredTo(false));
        System.setProperty(StripedBulk.MODE_PROPERTY, "sometimes");
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> StripedBulk.offeredTo(false));
        assertEquals("-Dvgpu.bulk.striping must be other-hosts, always or off, got 'sometimes'", bad.getMessage());
    }
}
