package org.vgpu.runtime.remote.lender;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SignedRequest;
import org.vgpu.common.security.SiteKey;

/**
 * A test's connection to a lender's control socket. {@link #request} signs each request with the site key, as every
 * control request must be (a blank one is sent as it is); without a key, requests go unsigned, as a stranger's.
 */
final class ControlClient implements AutoCloseable {
    private final Socket socket;
    private final BufferedReader in;
    private final OutputStream out;
    private final Optional<SiteKey> key;

    ControlClient(Endpoint endpoint, Path keyFile) throws IOException {
        this(endpoint, Optional.of(SiteKey.load(keyFile)));
    }

    /** A stranger's connection: requests unsigned. */
    static ControlClient unsigned(Endpoint endpoint) throws IOException {
        return new ControlClient(endpoint, Optional.empty());
    }

    private ControlClient(Endpoint endpoint, Optional<SiteKey> key) throws IOException {
        this.key = key;
        socket = new Socket(endpoint.host(), endpoint.port());
        socket.setSoTimeout(30_000);
        in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
        out = socket.getOutputStream();
    }

    /** Sends one request line and returns the reply lines, up to the one that starts with ok or error. */
    List<String> request(String line) throws IOException {
        return requestRaw((signed(line) + "\n").getBytes(StandardCharsets.ISO_8859_1));
    }

    /** The request with its signature; blanks around it stay outside, where the lender ignores them. */
    private String signed(String line) {
        String request = line.strip();
        if (key.isEmpty() || request.isEmpty()) {
            return line;
        }
        int start = line.indexOf(request);
        return line.substring(0, start)
                + SignedRequest.sign(
                        key.get(),
                        ControlProtocol.PURPOSE,
                        request,
                        Instant.now().plusSeconds(30))
                + line.substring(start + request.length());
    }

    List<String> requestRaw(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
        List<String> replies = new ArrayList<>();
        while (true) {
            String reply = in.readLine();
            if (reply == null) {
                throw new IOException("the lender closed the connection after " + replies);
            }
            replies.add(reply);
            if (reply.startsWith("ok") || reply.startsWith("error")) {
                return replies;
            }
        }
    }

    /** The single reply line of a request. */
    String ask(String line) throws IOException {
        List<String> replies = request(line);
        if (replies.size() != 1) {
            throw new AssertionError("expected one reply line to '" + line + "', got " + replies);
        }
        return replies.getFirst();
    }

    String readLine() throws IOException {
        return in.readLine();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
