package org.vgpu.common.line;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import org.vgpu.common.security.ThrowawaySiteKey;

/** What a log line or an error message may show of a request. */
class LineTextTest {
    @Test
    void noPartOfATokenOrMungeCredentialIsEchoed() {
        try (ThrowawaySiteKey key = ThrowawaySiteKey.create("line-text")) {
            String token = key.issuer().issue("42", 1, "n2-holder-7", Duration.ofMinutes(1));
            for (String request : new String[] {
                "agent poll 42 1 " + token + " nonce=00ff",
                "worker 42 1 10.0.0.2:40000 n2-holder-7 " + token,
                "ok vgpus=2 remote=1@10.0.0.2:40000#" + token,
                "assembly 42 n1 munge=MUNGE:AwQFAAC3Lx+abc/def=:=",
            }) {
                for (int chars : new int[] {20, 40, 80, 600}) {
                    String echoed = LineText.withoutSecrets(request, chars);
                    assertFalse(echoed.contains(token.substring(3, 11)), echoed);
                    assertFalse(echoed.contains("AwQF"), echoed);
                    assertEquals(LineText.printable(echoed, chars), echoed, "printable as before");
                }
            }
            assertEquals(
                    "agent poll 42 1 <secret> nonce=00ff",
                    LineText.withoutSecrets("agent poll 42 1 " + token + " nonce=00ff", 200));
            assertEquals(
                    "ok vgpus=2 remote=1@10.0.0.2:40000#<secret>",
                    LineText.withoutSecrets("ok vgpus=2 remote=1@10.0.0.2:40000#" + token, 200));
            assertEquals("drain n1 | hook pause", LineText.withoutSecrets("drain n1\nhook pause", 200));
        }
    }
}
