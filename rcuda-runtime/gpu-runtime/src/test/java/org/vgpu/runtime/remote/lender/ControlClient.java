package org.vgpu.runtime.remote.lender;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.vgpu.common.net.Endpoint;

/** A test's connection to a lender's control socket. */
final class ControlClient implements AutoCloseable {
    private final Socket socket;
    private final BufferedReader in;
    private final OutputStream out;

    ControlClient(Endpoint endpoint) throws IOException {
        socket = new Socket(endpoint.host(), endpoint.port());
        socket.setSoTimeout(30_000);
        in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
        out = socket.getOutputStream();
    }

    /** Sends one request line and returns the reply lines, up to the one that starts with ok or error. */
    List<String> request(String line) throws IOException {
        return requestRaw((line + "\n").getBytes(StandardCharsets.ISO_8859_1));
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
