package org.vgpu.runtime.remote.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.error.ConfigException;

/** TLS contexts from PEM files: a real loopback handshake, and a clear error for every bad file. */
@Timeout(60)
class TlsConfigTest {
    @TempDir
    static Path dir;

    static TestCertificates worker;
    static TestCertificates stranger;
    static EventLoopGroup group;

    @BeforeAll
    static void createCertificatesAndEventLoop() throws IOException, InterruptedException {
        worker = TestCertificates.create(dir, "worker");
        stranger = TestCertificates.create(dir, "stranger");
        group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
    }

    @AfterAll
    static void stopEventLoop() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    void aClientTrustingTheWorkersCertificateTalksToItOverTls13() throws Exception {
        SslContext server = new TlsConfig.Server(worker.certificate(), worker.privateKey()).newSslContext();
        SslContext client = new TlsConfig.Client(worker.certificate()).newSslContext();

        assertEquals("TLSv1.3 ping", exchange(server, client, "localhost"));
    }

    @Test
    void aClientTrustingAnotherCertificateFailsTheHandshake() throws Exception {
        SslContext server = new TlsConfig.Server(worker.certificate(), worker.privateKey()).newSslContext();
        SslContext client = new TlsConfig.Client(stranger.certificate()).newSslContext();

        assertHandshakeRefused(() -> exchange(server, client, "localhost"));
    }

    @Test
    void aClientRefusesACertificateIssuedForAnotherHost() throws Exception {
        SslContext server = new TlsConfig.Server(worker.certificate(), worker.privateKey()).newSslContext();
        SslContext client = new TlsConfig.Client(worker.certificate()).newSslContext();

        assertHandshakeRefused(() -> exchange(server, client, "gpu17.example"));
    }

    @Test
    void aKeyOfAnotherCertificateIsRefused() {
        String message =
                invalid(() -> new TlsConfig.Server(worker.certificate(), stranger.privateKey()).newSslContext());
        assertTrue(
                message.contains("TLS private key " + stranger.privateKey()
                        + " does not belong to the first certificate of " + worker.certificate()),
                message);
    }

    @Test
    void anExpiredCertificateIsRefusedWithItsEndDate() throws IOException, InterruptedException {
        TestCertificates expired = TestCertificates.createExpired(dir, "expired");
        String message =
                invalid(() -> new TlsConfig.Server(expired.certificate(), expired.privateKey()).newSslContext());
        assertTrue(message.contains("starts with a certificate that expired on "), message);
    }

    @Test
    void missingFilesAreNamed() {
        Path absent = dir.resolve("absent.pem");
        ConfigException noChain = assertThrows(
                ConfigException.class, () -> new TlsConfig.Server(absent, worker.privateKey()).newSslContext());
        assertEquals(ConfigException.Code.MISSING, noChain.code());
        assertFalse(
                noChain.getMessage().contains("CUDA_"), "a missing file is not a GPU error: " + noChain.getMessage());
        assertTrue(
                noChain.getMessage().contains("TLS certificate chain file " + absent + " does not exist"),
                noChain.getMessage());

        ConfigException noKey = assertThrows(
                ConfigException.class, () -> new TlsConfig.Server(worker.certificate(), absent).newSslContext());
        assertTrue(
                noKey.getMessage().contains("TLS private key file " + absent + " does not exist"), noKey.getMessage());

        ConfigException noTrust =
                assertThrows(ConfigException.class, () -> new TlsConfig.Client(absent).newSslContext());
        assertTrue(
                noTrust.getMessage().contains("TLS trusted certificates file " + absent + " does not exist"),
                noTrust.getMessage());
    }

    @Test
    void filesWithoutTheExpectedPemBlockAreRefused() throws IOException {
        Path text = Files.writeString(dir.resolve("notes.txt"), "not a certificate\n");
        assertTrue(invalid(() -> new TlsConfig.Client(text).newSslContext()).contains("holds no PEM certificate"));
        assertTrue(invalid(() -> new TlsConfig.Server(worker.certificate(), text).newSslContext())
                .contains("holds no PEM private key"));
        assertTrue(invalid(() -> new TlsConfig.Server(worker.certificate(), worker.certificate()).newSslContext())
                .contains("holds no PEM private key"));
    }

    @Test
    void aDamagedCertificateIsRefused() throws IOException {
        Path damaged = Files.writeString(
                dir.resolve("damaged.pem"), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
        assertTrue(invalid(() -> new TlsConfig.Client(damaged).newSslContext()).contains("cannot be parsed"));
    }

    @Test
    void keysInOtherFormatsAreRefusedWithTheConversion() throws IOException {
        Path traditional = Files.writeString(
                dir.resolve("rsa.pem"), "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n");
        assertTrue(invalid(() -> new TlsConfig.Server(worker.certificate(), traditional).newSslContext())
                .contains("openssl pkcs8 -topk8 -nocrypt -in " + traditional));

        Path encrypted = Files.writeString(
                dir.resolve("encrypted.pem"),
                "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n");
        assertTrue(invalid(() -> new TlsConfig.Server(worker.certificate(), encrypted).newSslContext())
                .contains("is encrypted"));

        Path garbage = Files.writeString(
                dir.resolve("garbage.pem"), "-----BEGIN PRIVATE KEY-----\nAAAAAAAA\n-----END PRIVATE KEY-----\n");
        assertTrue(invalid(() -> new TlsConfig.Server(worker.certificate(), garbage).newSslContext())
                .contains("is none of [RSA, EC, Ed25519, Ed448] or is damaged"));
    }

    /** Sends "ping" through a TLS echo server on loopback; returns the protocol and the echo. */
    private static String exchange(SslContext serverContext, SslContext clientContext, String hostName)
            throws Exception {
        Channel server = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel channel) {
                        channel.pipeline()
                                .addLast(serverContext.newHandler(channel.alloc()), new ChannelInboundHandlerAdapter() {
                                    @Override
                                    public void channelRead(ChannelHandlerContext ctx, Object message) {
                                        ctx.writeAndFlush(message);
                                    }

                                    @Override
                                    public void exceptionCaught(ChannelHandlerContext ctx, Throwable refusedHandshake) {
                                        ctx.close();
                                    }
                                });
                    }
                })
                .bind("127.0.0.1", 0)
                .sync()
                .channel();
        int port = ((java.net.InetSocketAddress) server.localAddress()).getPort();
        CompletableFuture<String> reply = new CompletableFuture<>();
        Channel client = null;
        try {
            client = new Bootstrap()
                    .group(group)
                    .channel(NioSocketChannel.class)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel channel) {
                            SslHandler tls = clientContext.newHandler(channel.alloc(), hostName, port);
                            tls.handshakeFuture().addListener(handshake -> {
                                if (handshake.isSuccess()) {
                                    channel.writeAndFlush(Unpooled.copiedBuffer("ping", StandardCharsets.US_ASCII));
                                } else {
                                    reply.completeExceptionally(handshake.cause());
                                }
                            });
                            channel.pipeline().addLast(tls, new ChannelInboundHandlerAdapter() {
                                @Override
                                public void channelRead(ChannelHandlerContext ctx, Object message) {
                                    ByteBuf echoed = (ByteBuf) message;
                                    try {
                                        reply.complete(tls.engine().getSession().getProtocol() + " "
                                                + echoed.toString(StandardCharsets.US_ASCII));
                                    } finally {
                                        echoed.release();
                                    }
                                }

                                @Override
                                public void exceptionCaught(ChannelHandlerContext ctx, Throwable failure) {
                                    reply.completeExceptionally(failure);
                                    ctx.close();
                                }
                            });
                        }
                    })
                    .connect("127.0.0.1", port)
                    .sync()
                    .channel();
            return reply.get(20, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("no TLS echo within 20 s", e);
        } finally {
            if (client != null) {
                client.close().syncUninterruptibly();
            }
            server.close().syncUninterruptibly();
        }
    }

    private static void assertHandshakeRefused(org.junit.jupiter.api.function.Executable exchange) {
        ExecutionException failed = assertThrows(ExecutionException.class, exchange);
        for (Throwable cause = failed.getCause(); cause != null; cause = cause.getCause()) {
            if (cause instanceof javax.net.ssl.SSLHandshakeException) {
                return;
            }
        }
        throw new AssertionError("expected a TLS handshake failure", failed);
    }

    private static String invalid(org.junit.jupiter.api.function.Executable call) {
        ConfigException refused = assertThrows(ConfigException.class, call);
        assertEquals(ConfigException.Code.INVALID, refused.code(), refused.getMessage());
        assertFalse(refused.getMessage().contains("Exception"), "Java exception text leaked: " + refused.getMessage());
        return refused.getMessage();
    }
}
