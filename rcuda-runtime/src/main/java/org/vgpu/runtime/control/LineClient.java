package org.vgpu.runtime.control;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.lender.Endpoint;

/**
 * Sends one request to a {@link LineServer} and reads its reply: lines up to and including the
 * first one that starts with {@code ok} or {@code error} (single-line replies are just that line).
 */
public final class LineClient {
    /** Replies of this client's peers are short; a longer line is a peer speaking another protocol. */
    private static final int MAX_REPLY_LINE_BYTES = 64 * 1024;
    private static final int MAX_REPLY_LINES = 100_000;

    private LineClient() {
    }

    /**
     * @param timeout for connecting, and for each read
     * @throws VgpuException CUDA_ERROR_UNKNOWN naming the peer when it cannot be reached, stops
     *         answering, or ends the connection before a final line
     */
    public static List<String> request(Endpoint peer, String requestLine, Duration timeout) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(peer.host(), peer.port()), (int) timeout.toMillis());
            socket.setSoTimeout((int) timeout.toMillis());
            OutputStream out = socket.getOutputStream();
            out.write((requestLine + "\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            BoundedLineReader reader = new BoundedLineReader(socket.getInputStream(), MAX_REPLY_LINE_BYTES);
            List<String> lines = new ArrayList<>();
            for (BoundedLineReader.Line line = reader.readLine(); line != null; line = reader.readLine()) {
                if (line.truncated() || lines.size() >= MAX_REPLY_LINES) {
                    throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, peer + " sent a reply that is too long");
                }
                lines.add(line.text());
                if (line.text().startsWith("ok") || line.text().startsWith("error")) {
                    return lines;
                }
            }
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, peer + " closed the connection before its reply ended");
        } catch (IOException e) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "cannot ask " + peer + " '" + LineText.printable(requestLine, 40)
                    + "': " + e.getMessage(), e);
        }
    }
}
