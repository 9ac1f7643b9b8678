package org.vgpu.common.error;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.net.ConnectException;
import java.nio.file.NoSuchFileException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** What a person reads of a failure: vgpu's words, whatever threw it. */
class VgpuFailureTest {

    @Test
    void aVgpuFailureIsDescribedByItsOwnMessage() {
        assertEquals("no vGPU 3 in this job", VgpuFailure.describe(new InputException("no vGPU 3 in this job")));
    }

    @Test
    void anUnexpectedExceptionShowsNeitherItsClassNorItsText() {
        assertEquals(
                "an unexpected internal failure",
                VgpuFailure.describe(new IllegalStateException("java.lang.NullPointerException at Foo.bar")));
        assertEquals("an unexpected internal failure", VgpuFailure.describe(null));
    }

    @Test
    void anIoFailureIsDescribedInVgpusWords() {
        assertEquals("connection refused", VgpuFailure.describe(new ConnectException("Connection refused")));
        assertEquals("no such file or directory", VgpuFailure.describe(new NoSuchFileException("/etc/vgpu/site.conf")));
    }

    /** Netty's transports throw IOExceptions (and ConnectExceptions) of their own, known by their text. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            bind(..) failed: Address already in use                     | the address is in use
            bind(..) failed: Cannot assign requested address            | the address is not one of this machine's
            connect(..) failed: Connection refused                      | connection refused
            recvAddress(..) failed: Connection reset by peer            | connection reset by the peer
            something no one expected                                   | input/output error""")
    void nativeTransportFailuresAreRecognisedByTheirText(String jdkText, String reason) {
        assertEquals(reason, IoReasons.of(new IOException(jdkText)));
    }

    @Test
    void aConnectTimeoutIsNoAnswerNotARefusal() {
        assertEquals(
                "no answer in time",
                IoReasons.of(new ConnectException("connection timed out after 30000 ms: /10.0.0.9:7400")));
    }

    @Test
    void codeNamesArePrefixedByTheirDomain() {
        assertEquals("CONFIG_MISSING", new ConfigException(ConfigException.Code.MISSING, "no file").codeName());
        assertEquals("NETWORK_REFUSED", new NetworkException(NetworkException.Code.REFUSED, "no").codeName());
        assertEquals("BAD_INPUT", new InputException("bad").codeName());
    }
}
