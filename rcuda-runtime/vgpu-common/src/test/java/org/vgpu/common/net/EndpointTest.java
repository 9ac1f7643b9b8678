package org.vgpu.common.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.common.error.InputException;

class EndpointTest {
    @ParameterizedTest
    @CsvSource({
        "gpu07.cluster:7000, gpu07.cluster, 7000",
        "10.1.2.3:0, 10.1.2.3, 0",
        "[::1]:65535, ::1, 65535",
        "[fe80::1%eth0]:80, fe80::1%eth0, 80"
    })
    void parsesAndPrintsTheSameText(String text, String host, int port) {
        Endpoint endpoint = Endpoint.parse(text);
        assertEquals(new Endpoint(host, port), endpoint);
        assertEquals(text, endpoint.toString());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "host",
                "host:",
                ":80",
                "::1:80",
                "host:http",
                "host:-1",
                "host:65536",
                "host:123456",
                "ho st:80",
                "[]:80",
                "[::1:80"
            })
    void refusesWhatIsNotHostColonPort(String text) {
        InputException refused = assertThrows(InputException.class, () -> Endpoint.parse(text));
        assertEquals("BAD_INPUT", refused.codeName());
    }

    @Test
    void saysHowToWriteIpv6() {
        InputException refused = assertThrows(InputException.class, () -> Endpoint.parse("::1:80"));
        assertTrue(refused.getMessage().contains("[ADDRESS]:PORT"), refused.getMessage());
    }

    @Test
    void knowsWildcardAddresses() {
        assertTrue(Endpoint.parse("0.0.0.0:1").isWildcard());
        assertTrue(Endpoint.parse("[::]:1").isWildcard());
        assertFalse(Endpoint.parse("127.0.0.1:1").isWildcard());
        assertEquals(Endpoint.parse("10.0.0.9:1"), Endpoint.parse("0.0.0.0:1").withHost("10.0.0.9"));
    }
}
