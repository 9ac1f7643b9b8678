package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.common.error.InputException;
import org.vgpu.common.net.Endpoint;

/** How the socket and the CLI write targets. */
class MigrationTargetTest {

    @ParameterizedTest
    @ValueSource(strings = {"0", "3", " 7 "})
    void digitsAreALocalGpu(String text) {
        assertEquals(new MigrationTarget.LocalGpu(Integer.parseInt(text.strip())), MigrationTarget.parse(text));
    }

    @ParameterizedTest
    @ValueSource(strings = {"lender-3:7400", "10.1.2.3:7000", "[fe80::1]:7001", "node_7.cluster.local:65535"})
    void hostAndPortIsAWorker(String text) {
        MigrationTarget target = MigrationTarget.parse(text);
        assertEquals(new MigrationTarget.RemoteWorker(Endpoint.parse(text)), target);
        assertEquals(text, target.toString());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                " ",
                "-1",
                "1.5",
                "gpu1",
                "host",
                "host:",
                ":80",
                "host:0",
                "0.0.0.0:80",
                "host:65536",
                "h st:80",
                "h@st:80",
                "fe80::1:80",
                "99999999999",
                "host:8o"
            })
    void anythingElseIsRefused(String text) {
        InputException e = assertThrows(InputException.class, () -> MigrationTarget.parse(text));
        assertEquals("BAD_INPUT", e.codeName(), e.getMessage());
        assertFalse(e.getMessage().contains("CUDA_"), "bad input wears a CUDA name: " + e.getMessage());
        assertFalse(e.getMessage().isBlank());
    }
}
