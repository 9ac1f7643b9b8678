package org.vgpu.common.agent;

import static org.vgpu.common.agent.AgentChannelChecks.checkNonce;
import static org.vgpu.common.agent.AgentChannelChecks.checkToken;
import static org.vgpu.common.agent.AgentChannelChecks.requireValid;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.vgpu.common.agent.AgentChannel.Migrate;
import org.vgpu.common.agent.AgentChannel.Target;

/**
 * The signature of a migrate command: HMAC-SHA256, key the UTF-8 bytes of the poll's session token, data the
 * channel's mac_data line ({@code <nonce> migrate <id> <vgpu> <target>}). Only the tracker (which checks tokens, so
 * knew it) and the job know the token, so the migration agent runs a command only when {@link #verify} holds; the
 * nonce ties the command to the poll it answers, so an old command cannot be replayed.
 */
final class MigrateCommandMac {
    private static final String MAC_ALGORITHM = "HmacSHA256";

    private MigrateCommandMac() {}

    /** The lowercase hex HMAC-SHA256 of the command's mac_data under the token's UTF-8 bytes. */
    static String mac(String token, String nonce, long id, int vgpu, Target target) {
        requireValid(checkToken(token));
        requireValid(checkNonce(nonce));
        String data = AgentChannelGrammar.macData(nonce, id, vgpu, target.format());
        try {
            Mac hmac = Mac.getInstance(MAC_ALGORITHM);
            hmac.init(new SecretKeySpec(token.getBytes(StandardCharsets.UTF_8), MAC_ALGORITHM));
            return HexFormat.of().formatHex(hmac.doFinal(data.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("every Java runtime has " + MAC_ALGORITHM, e);
        }
    }

    /** Compares in constant time, so the time taken tells nothing about how much of a forged mac was right. */
    static boolean verify(String token, String nonce, Migrate command) {
        String expected = mac(token, nonce, command.id(), command.vgpu(), command.target());
        return MessageDigest.isEqual(
                expected.getBytes(StandardCharsets.US_ASCII), command.mac().getBytes(StandardCharsets.US_ASCII));
    }
}
