package org.vgpu.bench.remote;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The peer's start reads past what the JVM itself prints on standard output (a flight recording asked for in
 * {@code JAVA_TOOL_OPTIONS} announces itself there), and still refuses anything else printed in place of where it
 * listens.
 */
class PlainSocketPeerTest {
    @Test
    void theJvmsOwnLogLinesAreToldApartFromThePeers() {
        assertTrue(
                PlainSocketPeer.isJvmLog(
                        "[0.409s][info][jfr,startup] Started recording 1. No limit specified, using maxsize=250MB as default."));
        assertTrue(PlainSocketPeer.isJvmLog("[0.420s][info][jfr,startup] "));
        assertTrue(PlainSocketPeer.isJvmLog("[info][gc] Using G1"));
        assertFalse(PlainSocketPeer.isJvmLog(PlainSocketPeer.LISTENING_PREFIX + "127.0.0.1:4000"));
        assertFalse(PlainSocketPeer.isJvmLog("Exception in thread \"main\" java.net.BindException"));
        assertFalse(PlainSocketPeer.isJvmLog("[not a log line"));
    }
}
