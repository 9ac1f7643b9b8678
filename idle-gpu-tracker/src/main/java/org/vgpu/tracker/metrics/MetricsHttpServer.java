package org.vgpu.tracker.metrics;

import static java.nio.charset.StandardCharsets.ISO_8859_1;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedSet;
import java.util.Set;

import io.prometheus.metrics.exporter.common.PrometheusHttpExchange;
import io.prometheus.metrics.exporter.common.PrometheusHttpRequest;
import io.prometheus.metrics.exporter.common.PrometheusHttpResponse;
import io.prometheus.metrics.exporter.common.PrometheusScrapeHandler;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.IoReasons;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.net.Endpoint;

/**
 * Serves {@code GET /metrics} over HTTP with bounds no client can outlast, so a scrape answers while
 * other connections stall: each request must arrive whole within {@link Limits#requestTimeout()} and
 * {@link Limits#maxHeaderBytes()}; at most {@link Limits#maxConnections()} connections are open, and a
 * new one beyond that closes the oldest that is still sending its request (a stalled one, as a scrape's
 * request arrives at once). Each connection is one virtual thread, so stalled connections hold no
 * platform thread; it answers one request and closes. The body is the official Prometheus client's
 * ({@link PrometheusScrapeHandler}: text format or OpenMetrics as asked, gzip, {@code name[]}); the
 * server binds exactly the address it is given.
 */
public final class MetricsHttpServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetricsHttpServer.class);
    private static final String PATH = "/metrics";

    /**
     * @param maxConnections how many connections may be open at once (stalled ones are closed first to make room)
     * @param requestTimeout how long a request may take to arrive, headers included
     * @param maxHeaderBytes the longest request line and headers taken
     */
    public record Limits(int maxConnections, Duration requestTimeout, int maxHeaderBytes) {
        public Limits {
            if (maxConnections < 1 || maxHeaderBytes < 64 || requestTimeout.isNegative() || requestTimeout.isZero()) {
                throw new IllegalArgumentException("metrics server limits must be positive: " + maxConnections + ", "
                        + requestTimeout + ", " + maxHeaderBytes);
            }
        }

        /** Enough for any number of Prometheus servers scraping; a request a scraper sends takes milliseconds. */
        public static Limits defaults() {
            return new Limits(64, Duration.ofSeconds(5), 8192);
        }
    }

    private final ServerSocket listener;
    private final PrometheusScrapeHandler scrapes;
    private final Limits limits;
    private final Thread acceptor;
    /** Open connections; guards itself and {@link #reading}. */
    private final Set<Socket> open = new HashSet<>();
    /** The open connections still sending their request, oldest first: closed first to make room. */
    private final SequencedSet<Socket> reading = new LinkedHashSet<>();

    private MetricsHttpServer(ServerSocket listener, PrometheusRegistry registry, Limits limits) {
        this.listener = listener;
        this.scrapes = new PrometheusScrapeHandler(registry);
        this.limits = limits;
        this.acceptor = Thread.ofPlatform().name("vgpu-metrics-accept").daemon().unstarted(this::acceptAll);
    }

    /**
     * Listens on {@code listen} (its host exactly: a wildcard only when given one) and serves at once.
     *
     * @throws NetworkException when the address cannot be bound (in use, not this machine's)
     */
    public static MetricsHttpServer start(Endpoint listen, PrometheusRegistry registry, Limits limits) {
        Objects.requireNonNull(registry, "registry");
        Objects.requireNonNull(limits, "limits");
        ServerSocket listener = null;
        try {
            listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getByName(listen.host()), listen.port()), 50);
        } catch (IOException e) {
            closeQuietly(listener);
            throw new NetworkException(
                    NetworkException.Code.CANNOT_LISTEN,
                    "cannot serve /metrics on " + listen + ": " + IoReasons.of(e),
                    e);
        }
        MetricsHttpServer server = new MetricsHttpServer(listener, registry, limits);
        server.acceptor.start();
        return server;
    }

    /** The port it listens on (the chosen one when started on port 0). */
    public int port() {
        return listener.getLocalPort();
    }

    /** The address it listens on. */
    public InetAddress address() {
        return listener.getInetAddress();
    }

    @Override
    public void close() {
        closeQuietly(listener);
        List<Socket> left;
        synchronized (open) {
            left = new ArrayList<>(open);
            open.clear();
            reading.clear();
        }
        left.forEach(MetricsHttpServer::closeQuietly);
        try {
            acceptor.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void acceptAll() {
        while (!listener.isClosed()) {
            Socket connection;
            try {
                connection = listener.accept();
            } catch (IOException e) {
                if (!listener.isClosed()) {
                    LOG.warn("/metrics: cannot accept a connection: {}", IoReasons.of(e));
                }
                continue;
            }
            if (admit(connection)) {
                Thread.ofVirtual().name("vgpu-metrics-connection").start(() -> serve(connection));
            }
        }
    }

    /** Takes a new connection, closing the oldest stalled one when all places are taken; false: none was free. */
    private boolean admit(Socket connection) {
        Socket evicted = null;
        synchronized (open) {
            if (open.size() >= limits.maxConnections()) {
                evicted = reading.isEmpty() ? null : reading.removeFirst();
                if (evicted == null) {
                    closeQuietly(connection);
                    return false;
                }
                open.remove(evicted);
            }
            open.add(connection);
            reading.add(connection);
        }
        closeQuietly(evicted);
        return true;
    }

    private void serve(Socket connection) {
        try (connection) {
            Request request = read(connection);
            synchronized (open) {
                if (!reading.remove(connection)) {
                    return; // closed to make room
                }
            }
            if (request != null) {
                answer(request, connection.getOutputStream());
            }
        } catch (SocketTimeoutException e) {
            LOG.debug("/metrics: a request did not arrive in {}", limits.requestTimeout());
        } catch (IOException e) {
            LOG.debug("/metrics: a connection failed: {}", IoReasons.of(e));
        } finally {
            synchronized (open) {
                open.remove(connection);
                reading.remove(connection);
            }
        }
    }

    /** The request line and headers, or null after answering a request that is too long or malformed. */
    private Request read(Socket connection) throws IOException {
        long deadline = System.nanoTime() + limits.requestTimeout().toNanos();
        InputStream in = connection.getInputStream();
        ByteArrayOutputStream header = new ByteArrayOutputStream();
        int lastFour = 0; // the last four bytes read, the newest lowest
        while (!ended(lastFour)) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new SocketTimeoutException("request time over");
            }
            connection.setSoTimeout((int) Math.max(1, Duration.ofNanos(left).toMillis()));
            int b = in.read();
            if (b < 0) {
                throw new SocketException("closed before the request's end");
            }
            if (header.size() >= limits.maxHeaderBytes()) {
                reply(connection.getOutputStream(), 431, "text/plain", new byte[0]);
                return null;
            }
            header.write(b);
            lastFour = lastFour << 8 | b;
        }
        Request request = Request.parse(header.toString(ISO_8859_1));
        if (request == null) {
            reply(connection.getOutputStream(), 400, "text/plain", new byte[0]);
        }
        return request;
    }

    /** Whether the headers ended: an empty line, after CRLF or (as HTTP allows readers to take) a bare LF. */
    private static boolean ended(int lastFour) {
        return lastFour == 0x0d0a0d0a || (lastFour & 0xffff) == 0x0a0a;
    }

    private void answer(Request request, OutputStream out) throws IOException {
        if (!request.method().equals("GET") && !request.method().equals("HEAD")) {
            reply(out, 405, "text/plain", new byte[0]);
            return;
        }
        if (!request.path().equals(PATH)) {
            reply(out, 404, "text/plain", "vgpu tracker: metrics are at /metrics\n".getBytes(ISO_8859_1));
            return;
        }
        Exchange exchange = new Exchange(request, out);
        scrapes.handleRequest(exchange);
        exchange.close();
    }

    private static void reply(OutputStream out, int status, String type, byte[] body) throws IOException {
        writeResponse(out, status, Map.of("Content-Type", type), body, true);
    }

    private static void writeResponse(
            OutputStream out, int status, Map<String, String> headers, byte[] body, boolean withBody)
            throws IOException {
        StringBuilder head = new StringBuilder("HTTP/1.1 ")
                .append(status)
                .append(' ')
                .append(reason(status))
                .append("\r\n");
        headers.forEach(
                (name, value) -> head.append(name).append(": ").append(value).append("\r\n"));
        head.append("Content-Length: ").append(body.length).append("\r\nConnection: close\r\n\r\n");
        out.write(head.toString().getBytes(ISO_8859_1));
        if (withBody) {
            out.write(body);
        }
        out.flush();
    }

    private static String reason(int status) {
        return switch (status) {
            case 200 -> "OK";
            case 400 -> "Bad Request";
            case 404 -> "Not Found";
            case 405 -> "Method Not Allowed";
            case 431 -> "Request Header Fields Too Large";
            default -> "Internal Server Error";
        };
    }

    private static void closeQuietly(AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception ignored) {
            // closing to end a connection: nothing to tell anyone
        }
    }

    /** A request line and its headers (names in lower case). */
    private record Request(String method, String path, String query, Map<String, List<String>> headers) {
        static Request parse(String text) {
            List<String> lines = text.lines().toList();
            String[] words = lines.isEmpty() ? new String[0] : lines.getFirst().split(" ");
            if (words.length != 3 || !words[2].startsWith("HTTP/1.")) {
                return null;
            }
            Map<String, List<String>> headers = new LinkedHashMap<>();
            for (String line : lines.subList(1, lines.size())) {
                int colon = line.indexOf(':');
                if (colon <= 0) {
                    continue;
                }
                headers.computeIfAbsent(
                                line.substring(0, colon).trim().toLowerCase(Locale.ROOT), name -> new ArrayList<>())
                        .add(line.substring(colon + 1).trim());
            }
            int question = words[1].indexOf('?');
            return new Request(
                    words[0],
                    question < 0 ? words[1] : words[1].substring(0, question),
                    question < 0 ? null : words[1].substring(question + 1),
                    headers);
        }
    }

    /** One scrape as the Prometheus client's handler sees it; the response goes out whole, with its length. */
    private static final class Exchange
            implements PrometheusHttpExchange, PrometheusHttpRequest, PrometheusHttpResponse {
        private final Request request;
        private final OutputStream out;
        private final Map<String, String> headers = new LinkedHashMap<>();
        private final ByteArrayOutputStream body = new ByteArrayOutputStream();
        private int status;
        private boolean sent;

        Exchange(Request request, OutputStream out) {
            this.request = request;
            this.out = out;
        }

        @Override
        public PrometheusHttpRequest getRequest() {
            return this;
        }

        @Override
        public PrometheusHttpResponse getResponse() {
            return this;
        }

        @Override
        public String getQueryString() {
            return request.query();
        }

        @Override
        public Enumeration<String> getHeaders(String name) {
            return Collections.enumeration(request.headers().getOrDefault(name.toLowerCase(Locale.ROOT), List.of()));
        }

        @Override
        public String getMethod() {
            return request.method();
        }

        @Override
        public String getRequestPath() {
            return request.path();
        }

        @Override
        public void setHeader(String name, String value) {
            headers.put(name, value);
        }

        @Override
        public OutputStream sendHeadersAndGetBody(int statusCode, int contentLength) {
            status = statusCode;
            return body;
        }

        @Override
        public void handleException(IOException e) throws IOException {
            throw e;
        }

        @Override
        public void handleException(RuntimeException e) {
            LOG.error("/metrics: a scrape failed", e);
            status = 500;
            headers.clear();
            headers.put("Content-Type", "text/plain");
            body.reset();
            body.writeBytes("vgpu tracker: the scrape failed, see the tracker's log\n".getBytes(ISO_8859_1));
        }

        @Override
        public void close() {
            if (sent) {
                return;
            }
            sent = true;
            try {
                writeResponse(
                        out,
                        status == 0 ? 500 : status,
                        headers,
                        body.toByteArray(),
                        !request.method().equals("HEAD"));
            } catch (IOException e) {
                LOG.debug("/metrics: the scraper went away: {}", IoReasons.of(e));
            }
        }
    }
}
