package org.vgpu.runtime.remote.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.reflect.Field;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.netty.buffer.AbstractByteBuf;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Makes Netty's leak detector fail tests instead of only logging: every ByteBuf is tracked
 * (paranoid level, also set by the surefire configuration) and every reported leak is collected
 * here, so a test can assert that none was reported after forcing the garbage collector to find
 * unreleased buffers. As an extension ({@code @ExtendWith(NettyLeaks.class)}) it arms the listener
 * before a test class and fails the class when a leak was reported by its end.
 */
public final class NettyLeaks implements BeforeAllCallback, AfterAllCallback {
    private static final List<String> REPORTED = new CopyOnWriteArrayList<>();

    static {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        try {
            // The detector every ByteBuf reports to; Netty offers no public accessor for it.
            Field field = AbstractByteBuf.class.getDeclaredField("leakDetector");
            field.setAccessible(true);
            ResourceLeakDetector<?> detector = (ResourceLeakDetector<?>) field.get(null);
            detector.setLeakListener((resourceType, records) -> REPORTED.add(resourceType + ": " + records));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot hook Netty's ByteBuf leak detector", e);
        }
    }

    /** For JUnit, which makes one per test class that extends with it. */
    public NettyLeaks() {}

    @Override
    public void beforeAll(ExtensionContext context) {
        watch();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        assertNoneReported();
    }

    /** Arms the listener; call before the code under test allocates. */
    public static void watch() {
        // the static initializer does the work
    }

    /** Leaks reported so far after {@code rounds} collections; each round lets the detector poll its queue. */
    public static List<String> collect(int rounds) {
        for (int i = 0; i < rounds; i++) {
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            // a tracked allocation is what makes the detector look at collected buffers
            Unpooled.buffer(1).release();
            ByteBuf pooled = PooledByteBufAllocator.DEFAULT.directBuffer(1);
            pooled.release();
        }
        return List.copyOf(REPORTED);
    }

    /** Fails when any leak has been reported since the JVM started (or since {@link #forget}). */
    public static void assertNoneReported() {
        List<String> leaks = collect(5);
        assertEquals(List.of(), leaks, "Netty reported leaked buffers");
    }

    /** Drops reports made so far; for the test that leaks on purpose to prove the hook works. */
    static void forget() {
        REPORTED.clear();
    }
}
