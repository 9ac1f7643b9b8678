package org.vgpu.runtime.conformance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.KernelNames;
import org.vgpu.runtime.api.MemoryInfo;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.PitchedMemory;
import org.vgpu.runtime.api.PointerAttribute;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.memory.DeviceMemory;

/**
 * The contract of {@link VirtualGpu}, run against every backend: a subclass only says how to
 * create its {@link GpuBackend}. Results are checked against values computed here on the CPU,
 * bad input against the CUDA error a GPU programmer expects.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class VirtualGpuConformanceTest {

    private GpuBackend backend;
    protected VirtualGpu gpu;
    private ModuleHandle kernels;

    /** The backend under test; called once per test class. */
    protected abstract GpuBackend createBackend();

    /** The physical (or emulated) device the tests open vGPUs on. */
    protected int device() {
        return 0;
    }

    /**
     * Moves the vGPU under test elsewhere in the middle of a test, where the suite has a migrating
     * variant; nothing elsewhere. Tests of state a migration must carry (set attributes, module
     * globals) call it between creating that state and using it.
     */
    protected void moveMidTest() {}

    /** The device the vGPU under test runs on now: {@link #device()}, unless a migrating variant moved it. */
    protected int deviceNow() {
        return device();
    }

    @BeforeAll
    void openBackend() {
        backend = createBackend();
    }

    @AfterAll
    void closeBackend() {
        backend.close();
    }

    @BeforeEach
    void openVgpu() {
        gpu = backend.open(device(), VaWindow.forVgpu(0));
        kernels = gpu.moduleLoadData(TestKernels.ptx());
    }

    @AfterEach
    void closeVgpu() {
        gpu.close();
    }

    // ---- device queries

    @Test
    void reportsDeviceProperties() {
        DeviceProperties properties = gpu.deviceProperties();
        assertFalse(properties.name().isBlank());
        assertTrue(properties.totalMemory() > 0);
        assertEquals(32, properties.warpSize());
        assertTrue(properties.maxThreadsPerBlock() >= 256);
        assertTrue(properties.multiprocessorCount() >= 1);
        assertEquals(backend.isEmulation(), properties.emulated());
        assertEquals(backend.deviceProperties(deviceNow()), properties);
        assertEquals(backend.name(), gpu.backendName());
    }

    @Test
    void aDeviceQueryAnswersAsTheDeviceBehindTheVgpuBeforeAndAfterAMove() {
        assertEquals(backend.deviceProperties(deviceNow()), gpu.deviceProperties());
        assertAttributesAreThoseOfTheDeviceNow();
        moveMidTest();
        assertEquals(
                backend.deviceProperties(deviceNow()),
                gpu.deviceProperties(),
                "after a move, the properties are those of the device the vGPU moved to");
        assertAttributesAreThoseOfTheDeviceNow();
    }

    /** Every attribute of the vGPU under test is what a fresh vGPU on the device behind it answers. */
    private void assertAttributesAreThoseOfTheDeviceNow() {
        try (VirtualGpu fresh = backend.open(deviceNow(), VaWindow.forVgpu(1))) {
            for (DeviceAttribute attribute : DeviceAttribute.values()) {
                assertEquals(fresh.deviceGetAttribute(attribute), gpu.deviceGetAttribute(attribute), attribute.name());
            }
        }
    }

    @Test
    void everyAttributeCudaDefinesIsAnsweredAndTheRefusedHostMemoryFeaturesAreNone() {
        assertEquals(147, DeviceAttribute.values().length);
        for (int number = 1; number <= 147; number++) {
            DeviceAttribute attribute = DeviceAttribute.fromCuda(number);
            assertEquals(number, attribute.cudaNumber());
            gpu.deviceGetAttribute(attribute);
        }
        assertEquals(DeviceAttribute.MAX_PITCH, DeviceAttribute.fromCuda(11));
        assertTrue(gpu.deviceGetAttribute(DeviceAttribute.MAX_PITCH) >= 1 << 20);
        assertTrue(gpu.deviceGetAttribute(DeviceAttribute.TOTAL_CONSTANT_MEMORY) >= 64 * 1024);
        assertTrue(gpu.deviceGetAttribute(DeviceAttribute.MAX_REGISTERS_PER_MULTIPROCESSOR) >= 64 * 1024);
        assertTrue(gpu.deviceGetAttribute(DeviceAttribute.MAX_BLOCKS_PER_MULTIPROCESSOR) >= 16);
        for (DeviceAttribute refused : List.of(
                DeviceAttribute.CAN_MAP_HOST_MEMORY,
                DeviceAttribute.MANAGED_MEMORY,
                DeviceAttribute.CONCURRENT_MANAGED_ACCESS,
                DeviceAttribute.PAGEABLE_MEMORY_ACCESS,
                DeviceAttribute.HOST_REGISTER_SUPPORTED,
                DeviceAttribute.READ_ONLY_HOST_REGISTER_SUPPORTED,
                DeviceAttribute.CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                DeviceAttribute.VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                DeviceAttribute.MEMORY_POOLS_SUPPORTED,
                DeviceAttribute.IPC_EVENT_SUPPORTED,
                DeviceAttribute.CAN_USE_64_BIT_STREAM_MEM_OPS)) {
            assertEquals(0, gpu.deviceGetAttribute(refused), refused + ": vgpu refuses the feature on every backend");
        }
        for (int undefined : new int[] {0, -1, 148, 1000}) {
            VgpuException refused =
                    assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> DeviceAttribute.fromCuda(undefined));
            assertTrue(
                    refused.getMessage().contains("attribute " + undefined + " is not one vgpu answers")
                            && refused.getMessage().contains("1 to 147"),
                    refused.getMessage());
        }
    }

    @Test
    void memoryInfoIsConsistent() {
        MemoryInfo info = gpu.memGetInfo();
        assertEquals(gpu.deviceProperties().totalMemory(), info.total());
        assertTrue(info.free() > 0 && info.free() <= info.total(), info.toString());
    }

    @Test
    void openingAnUnknownDeviceIsRefused() {
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_DEVICE, () -> backend.open(backend.deviceCount(), VaWindow.forVgpu(1)));
    }

    // ---- allocation inside the window

    @Test
    void allocationsAreAlignedNonOverlappingAndInsideTheWindow() {
        long a = gpu.memAlloc(1000);
        long b = gpu.memAlloc(3L << 20);
        long c = gpu.memAlloc(1);
        VaWindow window = gpu.window();
        for (long p : new long[] {a, b, c}) {
            assertTrue(window.contains(p, 1), () -> Long.toHexString(p) + " outside " + window);
            assertEquals(0, p % (p == b ? VaWindow.GRANULARITY : DeviceMemory.ALIGNMENT));
        }
        assertEquals(window.base(), a, "first fit starts at the window base");
        assertTrue(b >= a + 1000 && (c >= b + (3L << 20) || c + 1 <= b) && c >= a + 1000, "ranges overlap");
    }

    @Test
    void freedRangesAreReusedDeterministically() {
        long a = gpu.memAlloc(4096);
        long b = gpu.memAlloc(4096);
        gpu.memFree(a);
        assertEquals(a, gpu.memAlloc(100), "first fit reuses the freed range");
        assertNotEquals(a, b);
    }

    @Test
    void allocationsCanBePlacedAtAGivenAddress() {
        long placed = gpu.window().base() + 8 * VaWindow.GRANULARITY;
        gpu.memAllocAt(placed, 5000);
        gpu.memcpyHtoD(placed + 4992, MemorySegment.ofArray(new long[] {77}), 8);
        long[] back = new long[1];
        gpu.memcpyDtoH(MemorySegment.ofArray(back), placed + 4992, 8);
        assertEquals(77, back[0]);
        assertEquals(gpu.window().base(), gpu.memAlloc(8 * VaWindow.GRANULARITY), "the range below stays free");
        assertError(ErrorCode.VGPU_WINDOW_FULL, () -> gpu.memAllocAt(placed, 16), "already taken");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memAllocAt(placed + 8200, 16), "not aligned");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memAllocAt(placed + VaWindow.GRANULARITY + 4096, 3L << 20),
                "a large allocation not aligned to a chunk");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memAllocAt(VaWindow.forVgpu(7).base(), 16),
                "another window");
        gpu.memFree(placed);
        gpu.memAllocAt(placed, 16);
    }

    @Test
    void badAllocationSizesAreRefused() {
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memAlloc(0));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memAlloc(-5));
        assertError(ErrorCode.VGPU_WINDOW_FULL, () -> gpu.memAlloc(gpu.window().size() + 1));
    }

    @Test
    void allocationBeyondDeviceMemoryFailsWithoutLeaking() {
        long total = gpu.deviceProperties().totalMemory();
        long tooMuch = total + VaWindow.GRANULARITY;
        VgpuException e = assertThrows(VgpuException.class, () -> gpu.memAlloc(tooMuch));
        assertTrue(
                e.code() == ErrorCode.CUDA_ERROR_OUT_OF_MEMORY || e.code() == ErrorCode.VGPU_WINDOW_FULL,
                e.getMessage());
        assertEquals(gpu.window().base(), gpu.memAlloc(64), "the failed range went back to the free list");
    }

    @Test
    void freeingTwiceOrInsideAnAllocationIsRefused() {
        long a = gpu.memAlloc(8192);
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memFree(a + 16));
        gpu.memFree(a);
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memFree(a));
    }

    // ---- small allocations share chunks

    @Test
    void tenThousandSmallAllocationsTakeTwentyChunksAndKeepTheirData() {
        int count = 10_000;
        int bytes = 4096;
        long freeBefore = gpu.memGetInfo().free();
        List<DeviceRegion> allocations = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            allocations.add(new DeviceRegion(gpu.memAlloc(bytes), bytes));
        }
        long used = freeBefore - gpu.memGetInfo().free();
        assertTrue(
                used >= 20 * VaWindow.GRANULARITY && used < 24 * VaWindow.GRANULARITY,
                "10,000 x 4 KiB took " + used + " bytes, not about 40 MiB");
        assertEquals(
                count,
                allocations.stream().mapToLong(DeviceRegion::address).distinct().count(),
                "addresses are distinct");
        for (DeviceRegion allocation : allocations) {
            assertEquals(0, allocation.address() % DeviceMemory.ALIGNMENT);
            assertTrue(gpu.window().contains(allocation.address(), bytes));
        }
        List<DeviceRegion> sorted = allocations.stream()
                .sorted(java.util.Comparator.comparingLong(DeviceRegion::address))
                .toList();
        for (int i = 1; i < count; i++) {
            assertTrue(sorted.get(i).address() >= sorted.get(i - 1).address() + bytes, "allocations overlap");
        }
        MemorySegment pattern = gpu.memAllocHost((long) count * bytes);
        MemorySegment back = gpu.memAllocHost((long) count * bytes);
        try {
            for (long word = 0; word < (long) count * bytes / 8; word++) {
                pattern.setAtIndex(ValueLayout.JAVA_LONG, word, word * 0x9E3779B97F4A7C15L);
            }
            gpu.memcpyHtoDScatterAsync(allocations, pattern, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            moveMidTest();
            gpu.memcpyDtoHGatherAsync(back, allocations, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            assertEquals(-1L, back.mismatch(pattern), "every allocation keeps its own bytes");
        } finally {
            gpu.memFreeHost(pattern);
            gpu.memFreeHost(back);
        }
        for (DeviceRegion allocation : allocations) {
            gpu.memFree(allocation.address());
        }
        assertFreeMemory(freeBefore, "the last free of a chunk releases it");
    }

    @Test
    void aSmallAllocationIsItsOwnRangeInsideItsChunk() {
        long a = gpu.memAlloc(1000);
        long b = gpu.memAlloc(300);
        long c = gpu.memAlloc(1);
        assertEquals(gpu.window().base(), a);
        assertEquals(a + 1024, b, "1000 bytes take 1024, the next 256-byte boundary");
        assertEquals(b + 512, c);
        moveMidTest();
        assertEquals(new DeviceRegion(b, 300), gpu.memGetAddressRange(b + 299));
        assertEquals(300, gpu.pointerGetAttribute(PointerAttribute.RANGE_SIZE, b + 10));
        assertEquals(b, gpu.pointerGetAttribute(PointerAttribute.RANGE_START_ADDR, b + 10));
        assertError(ErrorCode.CUDA_ERROR_NOT_FOUND, () -> gpu.memGetAddressRange(b + 300), "between allocations");
        // mapped memory, but no allocation's: refused as before chunks were shared
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpyHtoD(a + 996, MemorySegment.ofArray(new byte[8]), 8),
                "a copy running past its allocation into the gap");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memsetD8(c + 256, (byte) 1, 1),
                "a memset after the last allocation of a chunk");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.checkDeviceRegions(List.of(new DeviceRegion(b, 301)), "test region"),
                "a region one byte past its allocation");
        gpu.memcpyHtoD(a, MemorySegment.ofArray(filled(1000, (byte) 0x11)), 1000);
        gpu.memcpyHtoD(c, MemorySegment.ofArray(new byte[] {0x33}), 1);
        gpu.memFree(b);
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyHtoD(b, MemorySegment.ofArray(new byte[1]), 1));
        long again = gpu.memAlloc(512);
        assertEquals(b, again, "first fit reuses the freed place");
        byte[] aBack = new byte[1000];
        byte[] cBack = new byte[1];
        gpu.memcpyDtoH(MemorySegment.ofArray(aBack), a, 1000);
        gpu.memcpyDtoH(MemorySegment.ofArray(cBack), c, 1);
        assertArrayEquals(filled(1000, (byte) 0x11), aBack, "freeing a neighbour leaves the data alone");
        assertEquals(0x33, cBack[0]);
        long large = gpu.memAlloc(DeviceMemory.SHARED_LIMIT + 1);
        assertEquals(gpu.window().base() + VaWindow.GRANULARITY, large, "a large allocation takes chunks of its own");
        assertEquals(c + 256, gpu.memAlloc(DeviceMemory.SHARED_LIMIT), "1 MiB still shares the first chunk");
    }

    @Test
    void theSameSequenceOfAllocationsAndFreesGivesTheSameAddresses() {
        long freeBefore = gpu.memGetInfo().free();
        List<Long> first = allocationSequence();
        assertFreeMemory(freeBefore, "every chunk released");
        assertEquals(first, allocationSequence());
    }

    /** Allocates and frees a fixed mix of sizes, frees what is left, returns the addresses it got. */
    private List<Long> allocationSequence() {
        java.util.Random random = new java.util.Random(42);
        List<Long> addresses = new ArrayList<>();
        List<Long> live = new ArrayList<>();
        for (int i = 0; i < 3000; i++) {
            if (!live.isEmpty() && random.nextInt(3) == 0) {
                gpu.memFree(live.remove(random.nextInt(live.size())));
            } else {
                long bytes = random.nextInt(20) == 0 ? 1 + random.nextInt(3 << 20) : 1 + random.nextInt(16384);
                long address = gpu.memAlloc(bytes);
                addresses.add(address);
                live.add(address);
            }
        }
        for (long address : live) {
            gpu.memFree(address);
        }
        return addresses;
    }

    @Test
    void allocationsPlacedAgainAllAtOnceContinueAsTheOriginalsWould() {
        java.util.Random random = new java.util.Random(7);
        List<DeviceRegion> live = new ArrayList<>();
        for (int i = 0; i < 600; i++) {
            long bytes = i % 97 == 0 ? (5L << 20) / 2 : 1 + random.nextInt(8192);
            live.add(new DeviceRegion(gpu.memAlloc(bytes), bytes));
        }
        for (int i = 0; i < live.size(); i += 3) {
            gpu.memFree(live.get(i).address());
        }
        List<DeviceRegion> kept = new ArrayList<>();
        for (int i = 0; i < live.size(); i++) {
            if (i % 3 != 0) {
                kept.add(live.get(i));
            }
        }
        long freeWithKept = gpu.memGetInfo().free();
        List<Long> next = List.of(gpu.memAlloc(100), gpu.memAlloc(7000), gpu.memAlloc(3L << 20), gpu.memAlloc(256));
        for (long address : next) {
            gpu.memFree(address);
        }
        for (DeviceRegion allocation : kept) {
            gpu.memFree(allocation.address());
        }
        gpu.memAllocAllAt(kept);
        assertFreeMemory(freeWithKept, "the same chunks are mapped again");
        assertEquals(
                next,
                List.of(gpu.memAlloc(100), gpu.memAlloc(7000), gpu.memAlloc(3L << 20), gpu.memAlloc(256)),
                "later allocations land where they would have");
        DeviceRegion one = kept.get(1);
        assertEquals(one, gpu.memGetAddressRange(one.address() + one.bytes() - 1));
    }

    @Test
    void aBadListOfAllocationsPlacesNone() {
        long freeBefore = gpu.memGetInfo().free();
        long base = gpu.window().base();
        assertError(
                ErrorCode.VGPU_WINDOW_FULL,
                () -> gpu.memAllocAllAt(List.of(
                        new DeviceRegion(base + 4 * VaWindow.GRANULARITY, 4096),
                        new DeviceRegion(base + 6 * VaWindow.GRANULARITY, 3L << 20),
                        new DeviceRegion(base + 4 * VaWindow.GRANULARITY + 2048, 4096))),
                "two allocations overlap");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memAllocAllAt(List.of(new DeviceRegion(base, 4096), new DeviceRegion(base + 4200, 64))),
                "an address not 256-byte aligned");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memAllocAllAt(null));
        assertFreeMemory(freeBefore, "nothing stays mapped");
        assertEquals(base, gpu.memAlloc(4096), "nothing stays placed");
        gpu.memAllocAllAt(List.of());
    }

    /**
     * At least {@code expected} bytes, less one chunk, are free: nothing of this vGPU's stays mapped (a GPU's driver
     * may take a little for itself meanwhile; a chunk less is a chunk not released). Only that side is asserted: on a
     * GPU the free memory is the device's, shared with other processes, and on the H100 a worker of an earlier test
     * gave back 100 MiB while a remote case ran, which a two-sided check took for a fault.
     */
    private void assertFreeMemory(long expected, String why) {
        long free = gpu.memGetInfo().free();
        assertTrue(free > expected - VaWindow.GRANULARITY, why + ": free " + free + ", expected " + expected);
    }

    private static byte[] filled(int n, byte value) {
        byte[] bytes = new byte[n];
        java.util.Arrays.fill(bytes, value);
        return bytes;
    }

    // ---- copies

    @Test
    void synchronousCopiesRoundTripHeapMemory() {
        float[] data = ramp(4096);
        long d = gpu.memAlloc(data.length * 4L);
        gpu.memcpyHtoD(d, MemorySegment.ofArray(data), data.length * 4L);
        float[] back = new float[data.length];
        gpu.memcpyDtoH(MemorySegment.ofArray(back), d, back.length * 4L);
        assertArrayEquals(data, back);
    }

    @Test
    void copiesHonourOffsetsInsideAnAllocation() {
        int[] zeros = new int[256];
        long d = gpu.memAlloc(zeros.length * 4L);
        gpu.memcpyHtoD(d, MemorySegment.ofArray(zeros), zeros.length * 4L);
        gpu.memcpyHtoD(d + 40, MemorySegment.ofArray(new int[] {7, 8, 9}), 12);
        int[] back = new int[256];
        gpu.memcpyDtoH(MemorySegment.ofArray(back), d, back.length * 4L);
        int[] expected = new int[256];
        expected[10] = 7;
        expected[11] = 8;
        expected[12] = 9;
        assertArrayEquals(expected, back);
        int[] window = new int[2];
        gpu.memcpyDtoH(MemorySegment.ofArray(window), d + 44, 8);
        assertArrayEquals(new int[] {8, 9}, window);
    }

    @Test
    void deviceToDeviceCopy() {
        byte[] data = bytes(100_000, 3);
        long src = gpu.memAlloc(data.length);
        long dst = gpu.memAlloc(data.length);
        gpu.memcpyHtoD(src, MemorySegment.ofArray(data), data.length);
        gpu.memcpyDtoD(dst, src, data.length);
        byte[] back = new byte[data.length];
        gpu.memcpyDtoH(MemorySegment.ofArray(back), dst, data.length);
        assertArrayEquals(data, back);
    }

    @Test
    void largeCopyRoundTripsThroughPinnedMemory() {
        long bytes = 64L << 20;
        MemorySegment host = gpu.memAllocHost(bytes);
        try {
            for (long i = 0; i < bytes / 8; i++) {
                host.setAtIndex(ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
            }
            long d = gpu.memAlloc(bytes);
            gpu.memcpyHtoD(d, host, bytes);
            host.fill((byte) 0);
            gpu.memcpyDtoH(host, d, bytes);
            for (long i = 0; i < bytes / 8; i += 4099) {
                assertEquals(i * 0x9E3779B97F4A7C15L, host.getAtIndex(ValueLayout.JAVA_LONG, i), "word " + i);
            }
            assertEquals((bytes / 8 - 1) * 0x9E3779B97F4A7C15L, host.getAtIndex(ValueLayout.JAVA_LONG, bytes / 8 - 1));
        } finally {
            gpu.memFreeHost(host);
        }
    }

    @Test
    void asynchronousCopiesOnAStream() {
        StreamHandle stream = gpu.streamCreate();
        long bytes = 1 << 20;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(bytes);
            MemorySegment dst = arena.allocate(bytes);
            for (long i = 0; i < bytes; i++) {
                src.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31));
            }
            long a = gpu.memAlloc(bytes);
            long b = gpu.memAlloc(bytes);
            gpu.memcpyHtoDAsync(a, src, bytes, stream);
            gpu.memcpyDtoDAsync(b, a, bytes, stream);
            gpu.memcpyDtoHAsync(dst, b, bytes, stream);
            gpu.streamSynchronize(stream);
            assertEquals(-1L, src.mismatch(dst));
        }
        gpu.streamDestroy(stream);
    }

    @Test
    void aGatherPacksManyRegionsBackToBack() {
        long big = 5L << 19;
        long a = gpu.memAlloc(big);
        long b = gpu.memAlloc(1 << 20);
        MemorySegment pattern = MemorySegment.ofArray(new byte[(int) big]);
        for (long i = 0; i < big; i++) {
            pattern.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 131 + (i >> 12)));
        }
        gpu.memcpyHtoD(a, pattern, big);
        gpu.memcpyHtoD(b, pattern.asSlice(12345), 1 << 20);
        // a region crossing several staging chunks, hundreds of small unaligned ones, empty ones,
        // aligned 4 KiB ones
        List<DeviceRegion> regions = new ArrayList<>();
        MemorySegment expected = Arena.ofAuto().allocate(big + (2 << 20));
        long expectedBytes = copyOfRegion(regions, expected, 0, pattern, a, 7, big - 7);
        for (int i = 0; i < 300; i++) {
            long offset = (i * 3001L) % ((1 << 20) - 4100);
            long bytes = i % 50 == 0 ? 0 : 1 + (i * 37L) % 4099;
            expectedBytes = copyOfRegion(regions, expected, expectedBytes, pattern.asSlice(12345), b, offset, bytes);
        }
        for (int i = 0; i < 64; i++) {
            expectedBytes = copyOfRegion(regions, expected, expectedBytes, pattern, a, i * 16384L, 4096);
        }
        StreamHandle stream = gpu.streamCreate();
        MemorySegment shared = gpu.memAllocHost(expectedBytes);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment confined = arena.allocate(expectedBytes);
            gpu.memcpyDtoHGatherAsync(shared, regions, stream);
            gpu.memcpyDtoHGatherAsync(confined, regions, StreamHandle.DEFAULT);
            gpu.streamSynchronize(stream);
            gpu.ctxSynchronize();
            assertEquals(-1L, shared.mismatch(expected.asSlice(0, expectedBytes)), "shared host memory");
            assertEquals(-1L, confined.mismatch(expected.asSlice(0, expectedBytes)), "confined host memory");
        } finally {
            gpu.memFreeHost(shared);
        }
        gpu.streamDestroy(stream);
    }

    /** Adds the region {@code device + offset, bytes} and its expected bytes at {@code at}; returns the new end. */
    private static long copyOfRegion(
            List<DeviceRegion> regions,
            MemorySegment expected,
            long at,
            MemorySegment content,
            long device,
            long offset,
            long bytes) {
        regions.add(new DeviceRegion(device + offset, bytes));
        MemorySegment.copy(content, offset, expected, at, bytes);
        return at + bytes;
    }

    @Test
    void aGatherWithNoRegionsOrBadOnesIsHandledAsCopiesAre() {
        long a = gpu.memAlloc(4096);
        long freed = gpu.memAlloc(4096);
        gpu.memFree(freed);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(8192);
            gpu.memcpyDtoHGatherAsync(host, List.of(), StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    () -> gpu.memcpyDtoHGatherAsync(
                            host, List.of(new DeviceRegion(a, 16), new DeviceRegion(freed, 16)), StreamHandle.DEFAULT),
                    "a freed region");
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    () -> gpu.memcpyDtoHGatherAsync(
                            host, List.of(new DeviceRegion(a + 4000, 200)), StreamHandle.DEFAULT),
                    "a region past its allocation's end");
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    () -> gpu.memcpyDtoHGatherAsync(
                            host.asSlice(0, 100),
                            List.of(new DeviceRegion(a, 64), new DeviceRegion(a + 64, 64)),
                            StreamHandle.DEFAULT),
                    "a host buffer too small");
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    () -> gpu.memcpyDtoHGatherAsync(
                            MemorySegment.ofArray(new byte[64]),
                            List.of(new DeviceRegion(a, 64)),
                            StreamHandle.DEFAULT),
                    "Java heap memory");
            gpu.ctxSynchronize();
        }
    }

    @Test
    void aScatterUnpacksIntoManyRegionsAndTouchesNothingElse() {
        long big = 5L << 19;
        long a = gpu.memAlloc(big);
        long b = gpu.memAlloc(1 << 20);
        long c = gpu.memAlloc(1 << 20);
        for (long allocation : new long[] {a, b, c}) {
            gpu.memsetD8(allocation, (byte) 0x5a, allocation == a ? big : 1 << 20);
        }
        // The device as it must look afterwards, allocation by allocation.
        MemorySegment wantA = filled(big);
        MemorySegment wantB = filled(1 << 20);
        MemorySegment wantC = filled(1 << 20);
        // a region crossing several staging chunks, 128 aligned 4 KiB ones with gaps between them,
        // 180 small unaligned ones, empty ones
        List<DeviceRegion> regions = new ArrayList<>();
        List<MemorySegment> images = new ArrayList<>();
        List<Long> imageOffsets = new ArrayList<>();
        regions.add(new DeviceRegion(a + 7, big - 7));
        images.add(wantA);
        imageOffsets.add(7L);
        for (int i = 0; i < 128; i++) {
            regions.add(new DeviceRegion(b + i * 8192L, 4096));
            images.add(wantB);
            imageOffsets.add(i * 8192L);
        }
        for (int i = 0; i < 180; i++) {
            long offset = i * 5000L + i % 7;
            long bytes = i % 45 == 0 ? 0 : 1 + (i * 37L) % 4990;
            regions.add(new DeviceRegion(c + offset, bytes));
            images.add(wantC);
            imageOffsets.add(offset);
        }
        long total = DeviceRegion.totalBytes(regions);
        MemorySegment packed = gpu.memAllocHost(total);
        StreamHandle stream = gpu.streamCreate();
        try {
            long at = 0;
            for (int r = 0; r < regions.size(); r++) {
                long bytes = regions.get(r).bytes();
                for (long i = 0; i < bytes; i++) {
                    packed.set(ValueLayout.JAVA_BYTE, at + i, (byte) ((at + i) * 131 + ((at + i) >> 12)));
                }
                MemorySegment.copy(packed, at, images.get(r), imageOffsets.get(r), bytes);
                at += bytes;
            }
            gpu.memcpyHtoDScatterAsync(regions, packed, stream);
            gpu.streamSynchronize(stream);
            assertDeviceHolds(a, wantA, "the large region");
            assertDeviceHolds(b, wantB, "the aligned 4 KiB regions");
            assertDeviceHolds(c, wantC, "the small unaligned regions");
        } finally {
            gpu.memFreeHost(packed);
        }
        gpu.streamDestroy(stream);
    }

    /** Host memory of {@code bytes}, each 0x5a, as memsetD8(0x5a) leaves device memory. */
    private static MemorySegment filled(long bytes) {
        return Arena.ofAuto().allocate(bytes).fill((byte) 0x5a);
    }

    private void assertDeviceHolds(long device, MemorySegment expected, String what) {
        MemorySegment actual = Arena.ofAuto().allocate(expected.byteSize());
        gpu.memcpyDtoH(actual, device, expected.byteSize());
        assertEquals(-1L, actual.mismatch(expected), what);
    }

    @Test
    void aScatterWithNoRegionsOrBadOnesIsHandledAsCopiesAre() {
        long a = gpu.memAlloc(4096);
        long freed = gpu.memAlloc(4096);
        gpu.memFree(freed);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(8192);
            gpu.memcpyHtoDScatterAsync(List.of(), host, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    () -> gpu.memcpyHtoDScatterAsync(
                            List.of(new DeviceRegion(a, 16), new DeviceRegion(freed, 16)), host, StreamHandle.DEFAULT),
                    "a freed region");
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    () -> gpu.memcpyHtoDScatterAsync(
                            List.of(new DeviceRegion(a + 4000, 200)), host, StreamHandle.DEFAULT),
                    "a region past its allocation's end");
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    () -> gpu.memcpyHtoDScatterAsync(
                            List.of(new DeviceRegion(a, 64), new DeviceRegion(a + 64, 64)),
                            host.asSlice(0, 100),
                            StreamHandle.DEFAULT),
                    "a host buffer too small");
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    () -> gpu.memcpyHtoDScatterAsync(
                            List.of(new DeviceRegion(a, 64)),
                            MemorySegment.ofArray(new byte[64]),
                            StreamHandle.DEFAULT),
                    "Java heap memory");
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    () -> gpu.memcpyHtoDScatterAsync(null, host, StreamHandle.DEFAULT),
                    "no region list");
            gpu.ctxSynchronize();
        }
    }

    @Test
    void asynchronousCopyFromTheJavaHeapIsRefused() {
        long d = gpu.memAlloc(64);
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpyHtoDAsync(d, MemorySegment.ofArray(new byte[64]), 64, StreamHandle.DEFAULT));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpyDtoHAsync(MemorySegment.ofArray(new byte[64]), d, 64, StreamHandle.DEFAULT));
    }

    @Test
    void copiesWithBadPointersAreRefused() {
        long a = gpu.memAlloc(4096);
        long freed = gpu.memAlloc(4096);
        gpu.memFree(freed);
        MemorySegment host = MemorySegment.ofArray(new byte[8192]);
        long foreign = VaWindow.forVgpu(5).base();
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyHtoD(freed, host, 16));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyDtoH(host, freed, 16));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyHtoD(foreign, host, 16));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyHtoD(0x1234, host, 16));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyDtoD(a, foreign, 16));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyHtoD(a, host, 4097), "past the allocation's end");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyDtoH(host, a + 4000, 200), "straddles the end");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpyHtoD(a, MemorySegment.ofArray(new byte[8]), 16),
                "host buffer smaller than the copy");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyHtoD(a, host, -1));
    }

    @Test
    void aPointerOfAnotherVgpuIsForeign() {
        try (VirtualGpu other = backend.open(device(), VaWindow.forVgpu(1))) {
            long theirs = other.memAlloc(1024);
            long ours = gpu.memAlloc(1024);
            other.memcpyHtoD(theirs, MemorySegment.ofArray(new int[] {42}), 4);
            assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memcpyDtoD(ours, theirs, 4));
            assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memFree(theirs));
            int[] back = new int[1];
            other.memcpyDtoH(MemorySegment.ofArray(back), theirs, 4);
            assertEquals(42, back[0], "the other vGPU's data is untouched");
        }
    }

    // ---- memset

    @Test
    void memsetFillsBytesAndWords() {
        long d = gpu.memAlloc(1024);
        gpu.memsetD8(d, (byte) 0x5A, 1024);
        gpu.memsetD32(d + 16, 0xCAFEBABE, 4);
        StreamHandle stream = gpu.streamCreate();
        gpu.memsetD8Async(d + 1000, (byte) 1, 24, stream);
        gpu.memsetD32Async(d + 512, 7, 2, stream);
        gpu.streamSynchronize(stream);
        byte[] back = new byte[1024];
        gpu.memcpyDtoH(MemorySegment.ofArray(back), d, 1024);
        MemorySegment view = MemorySegment.ofArray(back);
        assertEquals(0x5A, back[0]);
        assertEquals(0x5A, back[15]);
        assertEquals(0xCAFEBABE, view.get(ValueLayout.JAVA_INT_UNALIGNED, 16));
        assertEquals(0xCAFEBABE, view.get(ValueLayout.JAVA_INT_UNALIGNED, 28));
        assertEquals(0x5A, back[32]);
        assertEquals(7, view.get(ValueLayout.JAVA_INT_UNALIGNED, 516));
        assertEquals(1, back[1023]);
        assertEquals(0x5A, back[999]);
    }

    @Test
    void memsetD16FillsHalfWordsSynchronouslyAndOnAStream() {
        long d = gpu.memAlloc(256);
        gpu.memsetD8(d, (byte) 0x11, 256);
        gpu.memsetD16(d + 2, (short) 0xBEEF, 3);
        StreamHandle stream = gpu.streamCreate();
        gpu.memsetD16Async(d + 100, (short) -2, 10, stream);
        gpu.streamSynchronize(stream);
        byte[] back = new byte[256];
        gpu.memcpyDtoH(MemorySegment.ofArray(back), d, 256);
        MemorySegment view = MemorySegment.ofArray(back);
        assertEquals(0x1111, view.get(ValueLayout.JAVA_SHORT_UNALIGNED, 0));
        for (int i = 0; i < 3; i++) {
            assertEquals((short) 0xBEEF, view.get(ValueLayout.JAVA_SHORT_UNALIGNED, 2 + 2L * i));
        }
        assertEquals(0x1111, view.get(ValueLayout.JAVA_SHORT_UNALIGNED, 8), "the word after the last one is untouched");
        assertEquals((short) -2, view.get(ValueLayout.JAVA_SHORT_UNALIGNED, 118));
        assertEquals(0x11, back[120]);
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD16(d + 1, (short) 0, 1), "misaligned");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD16(d, (short) 0, 129), "past the end");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD16Async(d, (short) 0, -1, stream));
    }

    @Test
    void memsetD2D32FillsEachRowsWordsAndLeavesTheBytesBetweenRows() {
        int rows = 5;
        int pitchWords = 12;
        long d = gpu.memAlloc(4L * pitchWords * rows);
        gpu.memsetD8(d, (byte) 0x11, 4L * pitchWords * rows);
        gpu.memsetD2D32(d, 4L * pitchWords, 0xCAFEBABE, 7, rows);
        StreamHandle stream = gpu.streamCreate();
        // Columns 8 to 10 of rows 1 to 3, on a stream.
        gpu.memsetD2D32Async(d + 4L * (pitchWords + 8), 4L * pitchWords, -7, 3, 3, stream);
        gpu.streamSynchronize(stream);
        int[] back = readInts(gpu, d, pitchWords * rows);
        for (int row = 0; row < rows; row++) {
            for (int column = 0; column < pitchWords; column++) {
                int expected =
                        column < 7 ? 0xCAFEBABE : row >= 1 && row <= 3 && column >= 8 && column <= 10 ? -7 : 0x11111111;
                assertEquals(expected, back[row * pitchWords + column], "row " + row + ", word " + column);
            }
        }
        // Rows back to back are one block; one row needs no pitch that holds it; nothing to set is no call.
        gpu.memsetD2D32(d, 8, 5, 2, 3);
        gpu.memsetD2D32(d + 4L * pitchWords, 0, 6, 2, 1);
        gpu.memsetD2D32(d, 0, 9, 0, 3);
        assertArrayEquals(new int[] {5, 5, 5, 5, 5, 5}, readInts(gpu, d, 6));
        assertArrayEquals(new int[] {6, 6, 0xCAFEBABE}, readInts(gpu, d + 4L * pitchWords, 3));
    }

    @Test
    void badMemsetD2D32sAreRefusedAndWriteNothing() {
        long d = gpu.memAlloc(4096);
        gpu.memsetD8(d, (byte) 0x11, 4096);
        StreamHandle stream = gpu.streamCreate();
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD2D32(d + 2, 64, 1, 4, 4), "misaligned");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD2D32(d, 12, 1, 4, 4), "a pitch below a row");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD2D32(d, 18, 1, 4, 4), "a pitch of 18");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD2D32(d, 1024, 1, 4, 5), "past the end");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD2D32(d, 64, 1, -1, 4));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD2D32(d, Long.MAX_VALUE / 2, 1, 4, 4));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD2D32Async(d, 1024, 1, 4, 5, stream));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_HANDLE,
                () -> gpu.memsetD2D32Async(d, 64, 1, 4, 4, new StreamHandle(9999)));
        gpu.ctxSynchronize();
        for (int word : readInts(gpu, d, 1024)) {
            assertEquals(0x11111111, word, "a refused memset wrote nothing");
        }
    }

    // ---- 2D copies

    /** A 5 x 3 block of bytes 1..15 in rows {@code pitch} bytes apart, the gaps 0x77. */
    private static byte[] pitchedBlock(int pitch) {
        byte[] host = new byte[pitch * 2 + 5];
        java.util.Arrays.fill(host, (byte) 0x77);
        for (int row = 0; row < 3; row++) {
            for (int column = 0; column < 5; column++) {
                host[row * pitch + column] = (byte) (1 + row * 5 + column);
            }
        }
        return host;
    }

    @Test
    void memcpy2DCopiesRowsBetweenPitchesAndLeavesTheGapsAlone() {
        long device = gpu.memAlloc(256);
        gpu.memsetD8(device, (byte) 0xEE, 256);
        gpu.memcpy2D(
                new PitchedMemory.Device(device + 8, 32),
                new PitchedMemory.Host(MemorySegment.ofArray(pitchedBlock(7)), 7),
                5,
                3);
        byte[] raw = new byte[256];
        gpu.memcpyDtoH(MemorySegment.ofArray(raw), device, 256);
        for (int row = 0; row < 3; row++) {
            for (int column = 0; column < 5; column++) {
                assertEquals((byte) (1 + row * 5 + column), raw[8 + row * 32 + column], "row " + row);
            }
            assertEquals((byte) 0xEE, raw[8 + row * 32 + 5], "the device gap after row " + row);
        }
        assertEquals((byte) 0xEE, raw[7]);

        long other = gpu.memAlloc(64);
        gpu.memcpy2D(new PitchedMemory.Device(other, 5), new PitchedMemory.Device(device + 8, 32), 5, 3);
        byte[] back = new byte[6 * 2 + 5];
        java.util.Arrays.fill(back, (byte) 0x55);
        gpu.memcpy2D(new PitchedMemory.Host(MemorySegment.ofArray(back), 6), new PitchedMemory.Device(other, 5), 5, 3);
        byte[] expected = pitchedBlock(6);
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] == 0x77) {
                expected[i] = 0x55;
            }
        }
        assertArrayEquals(expected, back, "device to device packs the rows, device to host spreads them again");

        moveMidTest();
        byte[] afterMove = new byte[6 * 2 + 5];
        java.util.Arrays.fill(afterMove, (byte) 0x55);
        gpu.memcpy2D(
                new PitchedMemory.Host(MemorySegment.ofArray(afterMove), 6), new PitchedMemory.Device(other, 5), 5, 3);
        assertArrayEquals(expected, afterMove);
    }

    @Test
    void badMemcpy2DsAreRefused() {
        long device = gpu.memAlloc(64);
        MemorySegment host = MemorySegment.ofArray(new byte[64]);
        PitchedMemory.Device rows = new PitchedMemory.Device(device, 16);
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpy2D(new PitchedMemory.Device(device, 4), new PitchedMemory.Host(host, 8), 8, 2),
                "pitch below the width");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpy2D(rows, new PitchedMemory.Host(host, 16), 16, 5),
                "the last row lies past the allocation");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpy2D(rows, new PitchedMemory.Host(MemorySegment.ofArray(new byte[40]), 16), 16, 3),
                "the host buffer is too small");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpy2D(new PitchedMemory.Host(host, 8), new PitchedMemory.Host(host, 8), 8, 2),
                "host to host");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpy2D(rows, new PitchedMemory.Host(host, 16), 16, -1),
                "negative height");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpy2D(rows, new PitchedMemory.Host(host, Long.MAX_VALUE), 16, 3),
                "rows beyond any address");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpy2D(rows, new PitchedMemory.Device(device + 1, 16), 16, 4),
                "the source's last row runs past the allocation");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memcpy2D(
                        rows, new PitchedMemory.Device(VaWindow.forVgpu(5).base(), 16), 16, 1),
                "a foreign source");
        gpu.memcpy2D(rows, new PitchedMemory.Host(host, 16), 16, 0);
    }

    @Test
    void badMemsetsAreRefused() {
        long d = gpu.memAlloc(64);
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD32(d + 2, 0, 1), "misaligned");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD32(d, 0, 17), "past the end");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memsetD8(d, (byte) 0, 65), "past the end");
    }

    // ---- modules, functions, launches

    @Test
    void vectorAddComputesTheSum() {
        int n = 10_000;
        float[] a = ramp(n);
        float[] b = new float[n];
        for (int i = 0; i < n; i++) {
            b[i] = 0.25f * i - 3;
        }
        long da = upload(a);
        long db = upload(b);
        long dc = gpu.memAlloc(n * 4L);
        FunctionHandle add = gpu.moduleGetFunction(kernels, "vectorAdd");
        gpu.launchKernel(
                add,
                Dim3.of((n + 255) / 256),
                Dim3.of(256),
                0,
                StreamHandle.DEFAULT,
                KernelArgs.builder().pointer(da).pointer(db).pointer(dc).i32(n).build());
        float[] c = download(dc, n);
        for (int i = 0; i < n; i++) {
            assertEquals(a[i] + b[i], c[i], "element " + i);
        }
    }

    @Test
    void saxpyOnAStreamWithEvents() {
        int n = 5000;
        float[] x = ramp(n);
        float[] y = new float[n];
        java.util.Arrays.fill(y, 1.5f);
        long dx = upload(x);
        long dy = upload(y);
        StreamHandle stream = gpu.streamCreate();
        EventHandle start = gpu.eventCreate();
        EventHandle end = gpu.eventCreate();
        FunctionHandle saxpy = gpu.moduleGetFunction(kernels, "saxpy");
        gpu.eventRecord(start, stream);
        gpu.launchKernel(
                saxpy,
                Dim3.of((n + 127) / 128),
                Dim3.of(128),
                0,
                stream,
                KernelArgs.builder().i32(n).f32(2.0f).pointer(dx).pointer(dy).build());
        gpu.eventRecord(end, stream);
        gpu.eventSynchronize(end);
        assertTrue(gpu.eventElapsedTime(start, end) >= 0);
        float[] result = download(dy, n);
        for (int i = 0; i < n; i++) {
            assertEquals(2.0f * x[i] + 1.5f, result[i], "element " + i);
        }
        gpu.eventDestroy(start);
        gpu.eventDestroy(end);
        gpu.streamDestroy(stream);
    }

    @Test
    void anEmptyKernelLaunchesWithoutArguments() {
        FunctionHandle empty = gpu.moduleGetFunction(kernels, "emptyKernel");
        assertEquals(0, gpu.functionSignature(empty).parameterSizes().size());
        for (int i = 0; i < 100; i++) {
            gpu.launchKernel(empty, Dim3.of(1), Dim3.of(32), 0, StreamHandle.DEFAULT, KernelArgs.none());
        }
        gpu.ctxSynchronize();
    }

    @Test
    void signaturesComeFromTheModule() {
        FunctionHandle add = gpu.moduleGetFunction(kernels, "vectorAdd");
        assertEquals(List.of(8, 8, 8, 4), gpu.functionSignature(add).parameterSizes());
        assertEquals("vectorAdd", add.name());
    }

    @Test
    void launchesThatDoNotMatchTheKernelAreRefused() {
        FunctionHandle add = gpu.moduleGetFunction(kernels, "vectorAdd");
        long d = gpu.memAlloc(64);
        VgpuException tooFew = assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.launchKernel(
                        add,
                        Dim3.of(1),
                        Dim3.of(1),
                        0,
                        StreamHandle.DEFAULT,
                        KernelArgs.builder().pointer(d).pointer(d).build()));
        assertTrue(
                tooFew.getMessage().contains("vectorAdd") && tooFew.getMessage().contains("4 arguments"),
                tooFew.getMessage());
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.launchKernel(
                        add,
                        Dim3.of(1),
                        Dim3.of(1),
                        0,
                        StreamHandle.DEFAULT,
                        KernelArgs.builder()
                                .pointer(d)
                                .pointer(d)
                                .pointer(d)
                                .i64(1)
                                .build()),
                "long for an int");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.launchKernel(
                        add,
                        Dim3.of(1),
                        Dim3.of(4096),
                        0,
                        StreamHandle.DEFAULT,
                        KernelArgs.builder()
                                .pointer(d)
                                .pointer(d)
                                .pointer(d)
                                .i32(1)
                                .build()),
                "block too large");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> Dim3.of(0));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_HANDLE,
                () -> gpu.launchKernel(
                        new FunctionHandle(9999, "ghost"),
                        Dim3.of(1),
                        Dim3.of(1),
                        0,
                        StreamHandle.DEFAULT,
                        KernelArgs.none()));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_HANDLE,
                () -> gpu.launchKernel(
                        add,
                        Dim3.of(1),
                        Dim3.of(1),
                        0,
                        new StreamHandle(777),
                        KernelArgs.builder()
                                .pointer(d)
                                .pointer(d)
                                .pointer(d)
                                .i32(1)
                                .build()));
    }

    /** cuFFT takes its modules' kernels without naming them: each named one is found by its name. */
    @Test
    void aModulesKernelsAreListedSortedAndEachIsFoundByItsName() {
        KernelNames listed = gpu.moduleKernelNames(kernels);
        assertEquals(TestKernels.kernelNames().stream().sorted().toList(), listed.names());
        for (String name : listed.names()) {
            assertEquals(name, gpu.moduleGetFunction(kernels, name).name());
        }
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.moduleKernelNames(new ModuleHandle(4242)));
    }

    @Test
    void unknownKernelsAndBadImagesAreRefused() {
        VgpuException missing =
                assertError(ErrorCode.CUDA_ERROR_NOT_FOUND, () -> gpu.moduleGetFunction(kernels, "noSuchKernel"));
        assertTrue(missing.getMessage().contains("noSuchKernel"), missing.getMessage());
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_IMAGE,
                () -> gpu.moduleLoadData("not a module".getBytes(StandardCharsets.US_ASCII)));
        assertError(ErrorCode.CUDA_ERROR_INVALID_IMAGE, () -> gpu.moduleLoadData(new byte[0]));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.moduleGetFunction(new ModuleHandle(4242), "vectorAdd"));
        gpu.moduleUnload(kernels);
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.moduleUnload(kernels));
        kernels = gpu.moduleLoadData(TestKernels.ptx());
    }

    @Test
    void pointersStoredInDeviceMemoryStayValid() {
        // A ring of nodes spread over two allocations; each node holds the device address of the next.
        int nodes = 512;
        long first = gpu.memAlloc(nodes / 2 * 16L);
        long second = gpu.memAlloc(nodes / 2 * 16L);
        long[] address = new long[nodes];
        for (int i = 0; i < nodes; i++) {
            address[i] = (i % 2 == 0 ? first : second) + (i / 2) * 16L;
        }
        long[] firstImage = new long[nodes];
        long[] secondImage = new long[nodes];
        for (int i = 0; i < nodes; i++) {
            long[] image = i % 2 == 0 ? firstImage : secondImage;
            image[(i / 2) * 2] = address[(i * 7 + 1) % nodes]; // next
            image[(i / 2) * 2 + 1] = 1000L + i; // payload
        }
        gpu.memcpyHtoD(first, MemorySegment.ofArray(firstImage), nodes / 2 * 16L);
        gpu.memcpyHtoD(second, MemorySegment.ofArray(secondImage), nodes / 2 * 16L);
        long starts = upload(address);
        long out = gpu.memAlloc(nodes * 8L);
        int steps = 33;
        FunctionHandle chase = gpu.moduleGetFunction(kernels, "pointerChase");
        gpu.launchKernel(
                chase,
                Dim3.of((nodes + 127) / 128),
                Dim3.of(128),
                0,
                StreamHandle.DEFAULT,
                KernelArgs.builder()
                        .pointer(starts)
                        .pointer(out)
                        .i32(nodes)
                        .i32(steps)
                        .build());
        long[] payloads = new long[nodes];
        gpu.memcpyDtoH(MemorySegment.ofArray(payloads), out, nodes * 8L);
        for (int i = 0; i < nodes; i++) {
            int node = i;
            for (int s = 0; s < steps; s++) {
                node = (node * 7 + 1) % nodes;
            }
            assertEquals(1000L + node, payloads[i], "chase from node " + i);
        }
    }

    // ---- streams, events

    @Test
    void badStreamAndEventUseIsRefused() {
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.streamDestroy(StreamHandle.DEFAULT));
        StreamHandle stream = gpu.streamCreate();
        gpu.streamDestroy(stream);
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.streamDestroy(stream));
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.streamSynchronize(stream));
        EventHandle a = gpu.eventCreate();
        EventHandle b = gpu.eventCreate();
        gpu.eventRecord(a, StreamHandle.DEFAULT);
        gpu.eventSynchronize(a);
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.eventElapsedTime(a, b), "b never recorded");
        gpu.eventDestroy(b);
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.eventRecord(b, StreamHandle.DEFAULT));
    }

    @Test
    void workQueuedAfterAStreamWaitsForAnEventSeesTheWorkBeforeTheEvent() {
        int n = 1 << 18;
        float[] x = ramp(n);
        float[] y = new float[n];
        java.util.Arrays.fill(y, 1.5f);
        long dx = upload(x);
        long dy = upload(y);
        long dsum = gpu.memAlloc((long) n * Float.BYTES);
        StreamHandle producer = gpu.streamCreate();
        StreamHandle consumer = gpu.streamCreate();
        EventHandle produced = gpu.eventCreate();
        Dim3 grid = Dim3.of((n + 127) / 128);
        gpu.launchKernel(
                gpu.moduleGetFunction(kernels, "saxpy"),
                grid,
                Dim3.of(128),
                0,
                producer,
                KernelArgs.builder().i32(n).f32(2.0f).pointer(dx).pointer(dy).build());
        gpu.eventRecord(produced, producer);
        gpu.streamWaitEvent(consumer, produced);
        gpu.launchKernel(
                gpu.moduleGetFunction(kernels, "vectorAdd"),
                grid,
                Dim3.of(128),
                0,
                consumer,
                KernelArgs.builder()
                        .pointer(dy)
                        .pointer(dx)
                        .pointer(dsum)
                        .i32(n)
                        .build());
        MemorySegment host = gpu.memAllocHost((long) n * Float.BYTES);
        // Only the consumer is waited for: what it read of y must be the producer's result.
        gpu.memcpyDtoHAsync(host, dsum, (long) n * Float.BYTES, consumer);
        gpu.streamSynchronize(consumer);
        for (int i = 0; i < n; i++) {
            assertEquals(3.0f * x[i] + 1.5f, host.getAtIndex(ValueLayout.JAVA_FLOAT, i), "element " + i);
        }
        gpu.memFreeHost(host);
        gpu.eventDestroy(produced);
        gpu.streamDestroy(producer);
        gpu.streamDestroy(consumer);
    }

    @Test
    void waitingForAnEventNeverRecordedIsNoWaitAndUnknownHandlesAreRefused() {
        StreamHandle stream = gpu.streamCreate();
        EventHandle never = gpu.eventCreate();
        gpu.streamWaitEvent(stream, never);
        gpu.streamWaitEvent(StreamHandle.DEFAULT, never);
        gpu.streamSynchronize(stream);
        gpu.ctxSynchronize();
        EventHandle destroyed = gpu.eventCreate();
        gpu.eventDestroy(destroyed);
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.streamWaitEvent(stream, destroyed));
        gpu.streamDestroy(stream);
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.streamWaitEvent(stream, never));
        gpu.eventDestroy(never);
        gpu.ctxSynchronize();
    }

    @Test
    void aStreamQuerySaysDoneOnceTheStreamsWorkIsDoneAndItsCopyToTheHostHasLanded() {
        float[] x = ramp(1 << 16);
        StreamHandle stream = gpu.streamCreate();
        MemorySegment host = queueSaxpyCopiedToHost(stream, x, 2.0f, 1.5f);
        awaitDone(() -> gpu.streamQuery(stream), "the stream");
        // No synchronize: the query's answer alone says the copy's data is in.
        assertSaxpy(host, x, 2.0f, 1.5f);
        assertTrue(gpu.streamQuery(stream), "a stream stays done while nothing is queued on it");
        gpu.ctxSynchronize();
        assertTrue(gpu.streamQuery(StreamHandle.DEFAULT), "the default stream after a synchronize");
        gpu.memFreeHost(host);
        gpu.streamDestroy(stream);
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.streamQuery(stream));
    }

    @Test
    void aStreamQueryWhileAKernelRunsSaysNotReadyWithoutWaitingForIt() {
        assumeFalse(
                gpu.deviceProperties().emulated(),
                "the emulation runs work when it is issued: none is ever in flight to be asked about");
        StreamHandle stream = gpu.streamCreate();
        long payload = launchLongChase(stream);
        assertFalse(gpu.streamQuery(stream), "the chase is still running");
        gpu.streamSynchronize(stream);
        assertTrue(gpu.streamQuery(stream));
        long[] out = new long[1];
        gpu.memcpyDtoH(MemorySegment.ofArray(out), payload, Long.BYTES);
        assertEquals(42L, out[0]);
        gpu.streamDestroy(stream);
    }

    @Test
    void anEventQuerySaysDoneOnceTheWorkBeforeTheEventIsDoneOrWhenItWasNeverRecorded() {
        EventHandle never = gpu.eventCreate();
        assertTrue(gpu.eventQuery(never), "an event never recorded is done, as in CUDA");
        float[] x = ramp(1 << 16);
        StreamHandle stream = gpu.streamCreate();
        EventHandle copied = gpu.eventCreate();
        MemorySegment host = queueSaxpyCopiedToHost(stream, x, 3.0f, -0.5f);
        gpu.eventRecord(copied, stream);
        awaitDone(() -> gpu.eventQuery(copied), "the event");
        // No synchronize: the query's answer alone says the copy before the event has landed.
        assertSaxpy(host, x, 3.0f, -0.5f);
        assertTrue(gpu.eventQuery(copied), "an event stays done until it is recorded again");
        gpu.memFreeHost(host);
        gpu.eventDestroy(copied);
        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.eventQuery(copied));
        gpu.eventDestroy(never);
        gpu.streamDestroy(stream);
    }

    @Test
    void anEventQueryWhileTheKernelBeforeItRunsSaysNotReadyWithoutWaitingForIt() {
        assumeFalse(
                gpu.deviceProperties().emulated(),
                "the emulation runs work when it is issued: none is ever in flight to be asked about");
        StreamHandle stream = gpu.streamCreate();
        EventHandle chased = gpu.eventCreate();
        launchLongChase(stream);
        gpu.eventRecord(chased, stream);
        assertFalse(gpu.eventQuery(chased), "the chase before the event is still running");
        gpu.eventSynchronize(chased);
        assertTrue(gpu.eventQuery(chased));
        gpu.eventDestroy(chased);
        gpu.streamDestroy(stream);
    }

    /**
     * Launches on {@code stream} a pointer chase around one node that points at itself: 2^22
     * dependent loads, tens of milliseconds on a GPU, long after the next call has asked about it.
     * Returns where the chase writes the node's payload, 42.
     */
    private long launchLongChase(StreamHandle stream) {
        long node = gpu.memAlloc(2 * Long.BYTES);
        gpu.memcpyHtoD(node, MemorySegment.ofArray(new long[] {node, 42}), 2 * Long.BYTES);
        long starts = upload(new long[] {node});
        long payload = gpu.memAlloc(Long.BYTES);
        gpu.launchKernel(
                gpu.moduleGetFunction(kernels, "pointerChase"),
                Dim3.of(1),
                Dim3.of(1),
                0,
                stream,
                KernelArgs.builder()
                        .pointer(starts)
                        .pointer(payload)
                        .i32(1)
                        .i32(1 << 22)
                        .build());
        return payload;
    }

    /**
     * Queues on {@code stream} y = a x + y, y being {@code y0} everywhere, then the copy of y into
     * pinned host memory, which it returns for {@link #assertSaxpy} once the work is done.
     */
    private MemorySegment queueSaxpyCopiedToHost(StreamHandle stream, float[] x, float a, float y0) {
        int n = x.length;
        float[] y = new float[n];
        java.util.Arrays.fill(y, y0);
        long dx = upload(x);
        long dy = upload(y);
        MemorySegment host = gpu.memAllocHost((long) n * Float.BYTES);
        gpu.launchKernel(
                gpu.moduleGetFunction(kernels, "saxpy"),
                Dim3.of((n + 127) / 128),
                Dim3.of(128),
                0,
                stream,
                KernelArgs.builder().i32(n).f32(a).pointer(dx).pointer(dy).build());
        gpu.memcpyDtoHAsync(host, dy, (long) n * Float.BYTES, stream);
        return host;
    }

    private static void assertSaxpy(MemorySegment host, float[] x, float a, float y0) {
        for (int i = 0; i < x.length; i++) {
            assertEquals(a * x[i] + y0, host.getAtIndex(ValueLayout.JAVA_FLOAT, i), "element " + i);
        }
    }

    /** Asks {@code query} until it says done, as a program polls between other work; at most 30 s. */
    private static void awaitDone(BooleanSupplier query, String what) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!query.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, what + " never said done");
            Thread.onSpinWait();
        }
    }

    // ---- the calls real programs make besides the core ones

    @Test
    void theCurrentDeviceIsTheVgpusIndexInTheJob() {
        assertEquals(gpu.vgpuIndex(), gpu.ctxGetDevice());
        try (VirtualGpu third = backend.open(device(), VaWindow.forVgpu(3))) {
            assertEquals(3, third.ctxGetDevice(), "device k is vGPU k, whichever GPU serves it");
        }
        moveMidTest();
        assertEquals(0, gpu.ctxGetDevice(), "a migration does not change the device the program sees");
        VirtualGpu closed = backend.open(device(), VaWindow.forVgpu(4));
        closed.close();
        assertError(ErrorCode.VGPU_CLOSED, closed::ctxGetDevice);
    }

    @Test
    void deviceAttributesAgreeWithThePropertiesAndWithWhatGpusHave() {
        DeviceProperties properties = gpu.deviceProperties();
        assertEquals(properties.multiprocessorCount(), gpu.deviceGetAttribute(DeviceAttribute.MULTIPROCESSOR_COUNT));
        assertEquals(properties.maxThreadsPerBlock(), gpu.deviceGetAttribute(DeviceAttribute.MAX_THREADS_PER_BLOCK));
        assertEquals(32, gpu.deviceGetAttribute(DeviceAttribute.WARP_SIZE));
        assertEquals(
                properties.computeCapabilityMajor(), gpu.deviceGetAttribute(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR));
        assertEquals(
                properties.computeCapabilityMinor(), gpu.deviceGetAttribute(DeviceAttribute.COMPUTE_CAPABILITY_MINOR));
        assertEquals(48 * 1024, gpu.deviceGetAttribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK));
        assertTrue(gpu.deviceGetAttribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) > 48 * 1024);
        assertEquals(Integer.MAX_VALUE, gpu.deviceGetAttribute(DeviceAttribute.MAX_GRID_DIM_X));
        assertEquals(65535, gpu.deviceGetAttribute(DeviceAttribute.MAX_GRID_DIM_Y));
        assertEquals(1024, gpu.deviceGetAttribute(DeviceAttribute.MAX_BLOCK_DIM_X));
        assertEquals(64, gpu.deviceGetAttribute(DeviceAttribute.MAX_BLOCK_DIM_Z));
        assertEquals(1, gpu.deviceGetAttribute(DeviceAttribute.UNIFIED_ADDRESSING));
        assertEquals(1, gpu.deviceGetAttribute(DeviceAttribute.CONCURRENT_KERNELS));
        assertTrue(gpu.deviceGetAttribute(DeviceAttribute.MEMORY_CLOCK_RATE) > 0);
        assertTrue(gpu.deviceGetAttribute(DeviceAttribute.GLOBAL_MEMORY_BUS_WIDTH) > 0);
        int optIn = gpu.deviceGetAttribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        moveMidTest();
        assertEquals(
                optIn,
                gpu.deviceGetAttribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
                "a migration goes only where the same figures hold");
    }

    @Test
    void deviceAttributesAreCudasNumbersAndUnknownOnesAreRefusedByNumber() {
        assertEquals(DeviceAttribute.MULTIPROCESSOR_COUNT, DeviceAttribute.fromCuda(16));
        assertEquals(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, DeviceAttribute.fromCuda(97));
        VgpuException unknown = assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> DeviceAttribute.fromCuda(9999));
        assertTrue(unknown.getMessage().contains("attribute 9999"), unknown.getMessage());
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.deviceGetAttribute(null));
    }

    @Test
    void kernelAttributesAreTheCompiledKernelsAndTheDefaultsOfCuda() {
        FunctionHandle add = gpu.moduleGetFunction(kernels, "vectorAdd");
        DeviceProperties properties = gpu.deviceProperties();
        int threads = gpu.funcGetAttribute(FunctionAttribute.MAX_THREADS_PER_BLOCK, add);
        assertTrue(threads >= 32 && threads <= properties.maxThreadsPerBlock(), "max threads " + threads);
        assertTrue(gpu.funcGetAttribute(FunctionAttribute.NUM_REGS, add) > 0);
        assertEquals(
                properties.computeCapabilityMajor() * 10 + properties.computeCapabilityMinor(),
                gpu.funcGetAttribute(FunctionAttribute.BINARY_VERSION, add));
        assertTrue(gpu.funcGetAttribute(FunctionAttribute.PTX_VERSION, add) >= 80);
        int staticShared = gpu.funcGetAttribute(FunctionAttribute.SHARED_SIZE_BYTES, add);
        assertEquals(
                48 * 1024 - staticShared, gpu.funcGetAttribute(FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, add));
        assertEquals(FunctionAttribute.NUM_REGS, FunctionAttribute.fromCuda(4));
        VgpuException unknown = assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> FunctionAttribute.fromCuda(77));
        assertTrue(unknown.getMessage().contains("attribute 77"), unknown.getMessage());
    }

    @Test
    void dynamicSharedMemoryAbove48KiBNeedsTheKernelsAttributeRaisedWhichAMigrationKeeps() {
        FunctionHandle empty = gpu.moduleGetFunction(kernels, "emptyKernel");
        int wanted = 64 * 1024;
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> {
                    gpu.launchKernel(empty, Dim3.of(1), Dim3.of(32), wanted, StreamHandle.DEFAULT, KernelArgs.none());
                    gpu.ctxSynchronize();
                },
                "64 KiB of dynamic shared memory without opting in");
        gpu.funcSetAttribute(empty, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, wanted);
        gpu.funcSetAttribute(empty, FunctionAttribute.PREFERRED_SHARED_MEMORY_CARVEOUT, 100);
        assertEquals(wanted, gpu.funcGetAttribute(FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, empty));
        FunctionHandle again = gpu.moduleGetFunction(kernels, "emptyKernel");
        assertEquals(
                wanted,
                gpu.funcGetAttribute(FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, again),
                "every handle of the kernel sees it");
        moveMidTest();
        assertEquals(wanted, gpu.funcGetAttribute(FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, empty));
        gpu.launchKernel(empty, Dim3.of(1), Dim3.of(32), wanted, StreamHandle.DEFAULT, KernelArgs.none());
        gpu.ctxSynchronize();
    }

    @Test
    void badKernelAttributeSetsAreRefused() {
        FunctionHandle empty = gpu.moduleGetFunction(kernels, "emptyKernel");
        int optIn = gpu.deviceGetAttribute(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.funcSetAttribute(empty, FunctionAttribute.NUM_REGS, 16),
                "not settable");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.funcSetAttribute(empty, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, optIn + 1),
                "above the device's opt-in limit");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.funcSetAttribute(empty, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, -1));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.funcSetAttribute(empty, FunctionAttribute.PREFERRED_SHARED_MEMORY_CARVEOUT, 101));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.funcGetAttribute(null, empty), "no attribute");
        FunctionHandle unknown = new FunctionHandle(9999, "emptyKernel");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.funcGetAttribute(FunctionAttribute.NUM_REGS, unknown));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_HANDLE,
                () -> gpu.funcSetAttribute(unknown, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 0));
        assertEquals(
                48 * 1024,
                gpu.funcGetAttribute(FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, empty),
                "refused sets changed nothing");
    }

    @Test
    void contextLimitsAreCudasDefaultsUntilSetAndAMigrationSetsTheLastValuesAgain() {
        long stackBefore = gpu.ctxGetLimit(ContextLimit.STACK_SIZE);
        long heapBefore = gpu.ctxGetLimit(ContextLimit.MALLOC_HEAP_SIZE);
        for (ContextLimit limit : ContextLimit.values()) {
            assertTrue(gpu.ctxGetLimit(limit) > 0, limit + " has CUDA's default, or what this GPU's context has");
        }
        try {
            gpu.ctxSetLimit(ContextLimit.STACK_SIZE, 4 * 1024);
            gpu.ctxSetLimit(ContextLimit.MALLOC_HEAP_SIZE, 64L << 20);
            gpu.ctxSetLimit(ContextLimit.STACK_SIZE, 16 * 1024);
            long stack = gpu.ctxGetLimit(ContextLimit.STACK_SIZE);
            long heap = gpu.ctxGetLimit(ContextLimit.MALLOC_HEAP_SIZE);
            long fifo = gpu.ctxGetLimit(ContextLimit.PRINTF_FIFO_SIZE);
            assertTrue(stack >= 16 * 1024, "the last value set, or the driver's rounding up of it: " + stack);
            assertTrue(heap >= 64L << 20, "heap " + heap);
            moveMidTest();
            assertEquals(stack, gpu.ctxGetLimit(ContextLimit.STACK_SIZE), "the last stack size set, set again");
            assertEquals(heap, gpu.ctxGetLimit(ContextLimit.MALLOC_HEAP_SIZE));
            assertEquals(fifo, gpu.ctxGetLimit(ContextLimit.PRINTF_FIFO_SIZE), "a limit never set stays as it was");
            float[] x = ramp(1024);
            MemorySegment host = queueSaxpyCopiedToHost(StreamHandle.DEFAULT, x, 2.0f, 1.0f);
            gpu.ctxSynchronize();
            assertSaxpy(host, x, 2.0f, 1.0f);
        } finally {
            // A local GPU's limits are its primary context's, which the next test shares.
            gpu.ctxSetLimit(ContextLimit.STACK_SIZE, stackBefore);
            gpu.ctxSetLimit(ContextLimit.MALLOC_HEAP_SIZE, heapBefore);
        }
    }

    @Test
    void badContextLimitsAreRefusedAndNeitherTakenNorReplayed() {
        long stack = gpu.ctxGetLimit(ContextLimit.STACK_SIZE);
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.ctxSetLimit(ContextLimit.STACK_SIZE, -1));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.ctxSetLimit(null, 4096), "no limit");
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.ctxGetLimit(null), "no limit");
        assertEquals(ContextLimit.MALLOC_HEAP_SIZE, ContextLimit.fromCuda(2));
        VgpuException unknown = assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> ContextLimit.fromCuda(6));
        assertTrue(
                unknown.getMessage().contains("cuCtxSetLimit: limit 6 is not one vgpu answers"), unknown.getMessage());
        moveMidTest();
        assertEquals(stack, gpu.ctxGetLimit(ContextLimit.STACK_SIZE), "refused sets changed nothing, here or there");
    }

    @Test
    void anAddressTellsItsAllocationAndDeviceFromTheRuntimesOwnMap() {
        long small = gpu.memAlloc(1000);
        long large = gpu.memAlloc(3L << 20);
        assertEquals(new DeviceRegion(small, 1000), gpu.memGetAddressRange(small + 999));
        assertEquals(new DeviceRegion(large, 3L << 20), gpu.memGetAddressRange(large + (2L << 20)));
        long inside = large + 4096;
        assertEquals(large, gpu.pointerGetAttribute(PointerAttribute.RANGE_START_ADDR, inside));
        assertEquals(3L << 20, gpu.pointerGetAttribute(PointerAttribute.RANGE_SIZE, inside));
        assertEquals(inside, gpu.pointerGetAttribute(PointerAttribute.DEVICE_POINTER, inside));
        assertEquals(
                PointerAttribute.MEMORY_TYPE_DEVICE, gpu.pointerGetAttribute(PointerAttribute.MEMORY_TYPE, inside));
        assertEquals(0, gpu.pointerGetAttribute(PointerAttribute.DEVICE_ORDINAL, inside));
        assertEquals(1, gpu.pointerGetAttribute(PointerAttribute.MAPPED, inside));
        assertEquals(0, gpu.pointerGetAttribute(PointerAttribute.IS_MANAGED, inside));

        moveMidTest();
        assertEquals(new DeviceRegion(large, 3L << 20), gpu.memGetAddressRange(inside), "the same after a migration");
        assertEquals(0, gpu.pointerGetAttribute(PointerAttribute.DEVICE_ORDINAL, inside));

        assertError(
                ErrorCode.CUDA_ERROR_NOT_FOUND, () -> gpu.memGetAddressRange(small + 1000), "past the bytes asked for");
        assertError(
                ErrorCode.CUDA_ERROR_NOT_FOUND,
                () -> gpu.memGetAddressRange(VaWindow.forVgpu(5).base()));
        gpu.memFree(small);
        assertError(ErrorCode.CUDA_ERROR_NOT_FOUND, () -> gpu.memGetAddressRange(small), "freed");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.pointerGetAttribute(PointerAttribute.RANGE_SIZE, small));
        assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.pointerGetAttribute(null, inside));
        assertEquals(PointerAttribute.RANGE_SIZE, PointerAttribute.fromCuda(12));
        VgpuException unknown = assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> PointerAttribute.fromCuda(5));
        assertTrue(unknown.getMessage().contains("cuPointerGetAttribute: attribute 5"), unknown.getMessage());
    }

    /** Module variables only: a {@code __device__} float, a {@code __device__} table, {@code __constant__} words. */
    private static final String GLOBALS_PTX = """
            .version 8.0
            .target sm_80
            .address_size 64

            .visible .global .align 4 .f32 scale = 0f40000000;
            .visible .global .align 4 .b8 table[300];
            .visible .const .align 4 .u32 coefficients[4] = {1, 2, 3, 4};
            """;

    private static int[] readInts(VirtualGpu gpu, long address, int count) {
        int[] values = new int[count];
        gpu.memcpyDtoH(MemorySegment.ofArray(values), address, 4L * count);
        return values;
    }

    @Test
    void moduleVariablesHaveWindowAddressesThatCopiesAndMemsetsReach() {
        ModuleHandle module = gpu.moduleLoadData(GLOBALS_PTX.getBytes(StandardCharsets.US_ASCII));
        DeviceRegion scale = gpu.moduleGetGlobal(module, "scale");
        DeviceRegion table = gpu.moduleGetGlobal(module, "table");
        DeviceRegion coefficients = gpu.moduleGetGlobal(module, "coefficients");
        assertEquals(4, scale.bytes());
        assertEquals(300, table.bytes());
        assertEquals(16, coefficients.bytes());
        for (DeviceRegion global : List.of(scale, table, coefficients)) {
            assertTrue(gpu.window().contains(global.address(), global.bytes()), global + " inside the window");
        }
        assertEquals(table, gpu.moduleGetGlobal(module, "table"), "the same address each time, as in CUDA");
        assertArrayEquals(new int[] {1, 2, 3, 4}, readInts(gpu, coefficients.address(), 4), "initialised as declared");
        float[] two = new float[1];
        gpu.memcpyDtoH(MemorySegment.ofArray(two), scale.address(), 4);
        assertEquals(2.0f, two[0]);

        gpu.memcpyHtoD(coefficients.address() + 4, MemorySegment.ofArray(new int[] {20, 30}), 8);
        assertArrayEquals(new int[] {1, 20, 30, 4}, readInts(gpu, coefficients.address(), 4));
        gpu.memsetD8(table.address(), (byte) 7, 300);
        gpu.memsetD32(table.address() + 8, 0x01020304, 2);
        long buffer = gpu.memAlloc(300);
        gpu.memcpyDtoD(buffer, table.address(), 300);
        byte[] back = new byte[300];
        gpu.memcpyDtoH(MemorySegment.ofArray(back), buffer, 300);
        assertEquals(7, back[0]);
        assertEquals(4, back[8], "little-endian words");
        assertEquals(7, back[299]);
        assertEquals(table, gpu.memGetAddressRange(table.address() + 299));

        assertError(ErrorCode.CUDA_ERROR_NOT_FOUND, () -> gpu.moduleGetGlobal(module, "noSuchVariable"));
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memsetD8(table.address() + 1, (byte) 0, 300),
                "one byte past the variable");
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.moduleGetGlobalAt(module, "table", table.address() + 256),
                "a variable keeps its address");
        gpu.moduleUnload(module);
        assertError(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                () -> gpu.memsetD8(table.address(), (byte) 0, 1),
                "the variable went with its module");
        assertError(ErrorCode.CUDA_ERROR_NOT_FOUND, () -> gpu.memGetAddressRange(table.address()));
    }

    @Test
    void moduleVariablesKeepTheirAddressesAndContentsAcrossAMigration() {
        ModuleHandle module = gpu.moduleLoadData(GLOBALS_PTX.getBytes(StandardCharsets.US_ASCII));
        DeviceRegion table = gpu.moduleGetGlobal(module, "table");
        DeviceRegion coefficients = gpu.moduleGetGlobal(module, "coefficients");
        byte[] pattern = new byte[300];
        for (int i = 0; i < pattern.length; i++) {
            pattern[i] = (byte) (i * 7 + 1);
        }
        gpu.memcpyHtoD(table.address(), MemorySegment.ofArray(pattern), 300);
        gpu.memcpyHtoD(coefficients.address(), MemorySegment.ofArray(new int[] {-1, -2, -3, -4}), 16);

        moveMidTest();

        assertEquals(table, gpu.moduleGetGlobal(module, "table"));
        assertEquals(coefficients, gpu.moduleGetGlobal(module, "coefficients"));
        byte[] back = new byte[300];
        gpu.memcpyDtoH(MemorySegment.ofArray(back), table.address(), 300);
        assertArrayEquals(pattern, back, "the contents moved with the vGPU");
        assertArrayEquals(new int[] {-1, -2, -3, -4}, readInts(gpu, coefficients.address(), 4));
        DeviceRegion scale = gpu.moduleGetGlobal(module, "scale");
        float[] two = new float[1];
        gpu.memcpyDtoH(MemorySegment.ofArray(two), scale.address(), 4);
        assertEquals(2.0f, two[0], "a variable first looked up after the move has its declared value");
    }

    // ---- life cycle, threads

    @Test
    void aClosedVgpuRefusesCallsAndReleasesItsWindow() {
        VirtualGpu second = backend.open(device(), VaWindow.forVgpu(2));
        long p = second.memAlloc(1 << 20);
        second.close();
        second.close();
        assertError(ErrorCode.VGPU_CLOSED, () -> second.memAlloc(16));
        assertError(ErrorCode.VGPU_CLOSED, () -> second.memcpyHtoD(p, MemorySegment.ofArray(new byte[4]), 4));
        try (VirtualGpu again = backend.open(device(), VaWindow.forVgpu(2))) {
            assertEquals(p, again.memAlloc(1 << 20), "the same window and address are available again");
        }
    }

    @Test
    void threadsOnTheirOwnStreamsDoNotInterfere() throws Exception {
        int threads = 4;
        int n = 20_000;
        FunctionHandle saxpy = gpu.moduleGetFunction(kernels, "saxpy");
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<float[]>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                float factor = t + 1;
                results.add(pool.submit(() -> {
                    StreamHandle stream = gpu.streamCreate();
                    long dx = upload(ramp(n));
                    long dy = gpu.memAlloc(n * 4L);
                    gpu.memsetD32Async(dy, Float.floatToRawIntBits(1f), n, stream);
                    for (int round = 0; round < 10; round++) {
                        gpu.launchKernel(
                                saxpy,
                                Dim3.of((n + 255) / 256),
                                Dim3.of(256),
                                0,
                                stream,
                                KernelArgs.builder()
                                        .i32(n)
                                        .f32(factor)
                                        .pointer(dx)
                                        .pointer(dy)
                                        .build());
                    }
                    gpu.streamSynchronize(stream);
                    float[] y = download(dy, n);
                    gpu.memFree(dx);
                    gpu.memFree(dy);
                    gpu.streamDestroy(stream);
                    return y;
                }));
            }
            for (int t = 0; t < threads; t++) {
                float[] y = results.get(t).get();
                float factor = t + 1;
                for (int i = 0; i < n; i += 997) {
                    float x = i * 0.5f - 17;
                    float expected = 1f;
                    for (int round = 0; round < 10; round++) {
                        expected = factor * x + expected;
                    }
                    assertEquals(expected, y[i], "thread " + t + " element " + i);
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void concurrentAllocationsAndFreesNeverShareARange() throws Exception {
        int threads = 4;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long tag = t;
                done.add(pool.submit(() -> {
                    for (int round = 0; round < 150; round++) {
                        long d = gpu.memAlloc(4096);
                        long[] pattern = {tag, round, d};
                        gpu.memcpyHtoD(d, MemorySegment.ofArray(pattern), 24);
                        long[] back = new long[3];
                        gpu.memcpyDtoH(MemorySegment.ofArray(back), d, 24);
                        assertArrayEquals(pattern, back, "thread " + tag + " round " + round);
                        gpu.memFree(d);
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    // ---- helpers

    protected static VgpuException assertError(ErrorCode expected, Executable call) {
        return assertError(expected, call, "");
    }

    protected static VgpuException assertError(ErrorCode expected, Executable call, String why) {
        VgpuException e = assertThrows(VgpuException.class, call::execute, why);
        assertEquals(expected, e.code(), () -> why + ": " + e.getMessage());
        assertTrue(e.getMessage().startsWith(expected.name()), e.getMessage());
        return e;
    }

    @FunctionalInterface
    protected interface Executable {
        void execute() throws Throwable;
    }

    protected long upload(float[] data) {
        long d = gpu.memAlloc(data.length * 4L);
        gpu.memcpyHtoD(d, MemorySegment.ofArray(data), data.length * 4L);
        return d;
    }

    protected long upload(long[] data) {
        long d = gpu.memAlloc(data.length * 8L);
        gpu.memcpyHtoD(d, MemorySegment.ofArray(data), data.length * 8L);
        return d;
    }

    protected float[] download(long d, int n) {
        float[] out = new float[n];
        gpu.memcpyDtoH(MemorySegment.ofArray(out), d, n * 4L);
        return out;
    }

    private static float[] ramp(int n) {
        float[] data = new float[n];
        for (int i = 0; i < n; i++) {
            data[i] = i * 0.5f - 17;
        }
        return data;
    }

    private static byte[] bytes(int n, int seed) {
        byte[] data = new byte[n];
        for (int i = 0; i < n; i++) {
            data[i] = (byte) (i * seed + (i >> 8));
        }
        return data;
    }
}
