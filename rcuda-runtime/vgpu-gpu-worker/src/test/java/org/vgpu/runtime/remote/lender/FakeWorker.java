package org.vgpu.runtime.remote.lender;

import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.runtime.api.VgpuException;

/**
 * A stand-in for the GPU worker that keeps its process contract (options, listening line, one
 * session, served line, exit status) without a GPU or the remote runtime. Its session echoes
 * every byte until the client half-closes; with no client within its idle timeout it exits 1. The worker id's prefix picks a misbehaviour:
 * {@code crash} exits 3 before listening, {@code silent} never reports listening, {@code badline}
 * reports an endpoint that is not one, {@code chatty} floods both pipes before listening,
 * {@code stubborn} ignores SIGTERM.
 */
public final class FakeWorker {
    private FakeWorker() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            options.put(args[i], args[i + 1]);
        }
        List<String> jvmOptions = ManagementFactory.getRuntimeMXBean().getInputArguments();
        System.err.println("fake worker jvm " + String.join(" ", jvmOptions));
        System.err.println("fake worker args " + String.join(" ", args));
        for (String required : List.of("--listen", "--backend", "--device", "--worker-id", "--key-file")) {
            if (!options.containsKey(required)) {
                System.err.println("fake worker: missing " + required);
                System.exit(2);
            }
        }
        try {
            SiteKey.load(Path.of(options.get("--key-file")));
        } catch (VgpuException e) {
            System.err.println("vgpu worker: " + e.getMessage());
            System.exit(1);
        }
        String id = options.get("--worker-id");
        if (id.startsWith("crash")) {
            System.err.println("fake worker " + id + ": no GPU here");
            System.exit(3);
        }
        if (id.startsWith("silent")) {
            Thread.sleep(Long.MAX_VALUE);
        }
        if (id.startsWith("badline")) {
            System.out.println(WorkerLauncher.LISTENING_PREFIX + "nowhere");
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
        }
        if (id.startsWith("chatty")) {
            for (int i = 0; i < 20_000; i++) {
                System.out.println("chatter on stdout " + i);
                System.err.println("chatter on stderr " + i);
            }
        }
        if (id.startsWith("stubborn")) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    Thread.sleep(Long.MAX_VALUE);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
        }
        System.exit(serveOneSession(Endpoint.parse(options.get("--listen")), options.get("--idle-timeout")) ? 0 : 1);
    }

    /** Whether a client came: like the real worker, one that waited in vain exits 1 after its served line. */
    private static boolean serveOneSession(Endpoint listen, String idleTimeoutSeconds) throws Exception {
        try (ServerSocket server = new ServerSocket(listen.port(), 1, InetAddress.getByName(listen.host()))) {
            if (idleTimeoutSeconds != null) {
                server.setSoTimeout(Integer.parseInt(idleTimeoutSeconds) * 1000);
            }
            System.out.println(WorkerLauncher.LISTENING_PREFIX + new Endpoint(listen.host(), server.getLocalPort()));
            System.out.flush();
            long bytes = 0;
            int calls = 0;
            try (Socket client = server.accept();
                    InputStream in = client.getInputStream();
                    OutputStream out = client.getOutputStream()) {
                calls = 1;
                byte[] buffer = new byte[8192];
                for (int read = in.read(buffer); read > 0; read = in.read(buffer)) {
                    out.write(buffer, 0, read);
                    bytes += read;
                }
            } catch (SocketTimeoutException idle) {
                System.err.println("fake worker: no client within " + idleTimeoutSeconds + " s");
            }
            System.out.println(WorkerLauncher.SERVED_PREFIX + "calls=" + calls + " bytes_in=" + bytes + " bytes_out="
                    + bytes + " busy_ms=0");
            System.out.flush();
            return calls > 0;
        }
    }
}
