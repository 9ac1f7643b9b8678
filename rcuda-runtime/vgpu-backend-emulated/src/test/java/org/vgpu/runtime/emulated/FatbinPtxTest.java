package org.vgpu.runtime.emulated;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import io.airlift.compress.lz4.Lz4Compressor;
import io.airlift.compress.zstd.ZstdCompressor;
import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

class FatbinPtxTest {
    private static final String OLDER = ".version 8.0\n.target sm_80\n.visible .entry older() { ret; }\n";
    private static final String NEWER = ".version 9.0\n.target sm_90\n.visible .entry newer() { ret; }\n";

    private enum Packing {
        PLAIN,
        ZSTD,
        LZ4
    }

    /** One entry of a fatbin as nvcc writes it: a 64-byte header, then the payload, padded to 8 bytes. */
    private static byte[] entry(int kind, int architecture, byte[] text, Packing packing) {
        byte[] payload = switch (packing) {
            case PLAIN -> text;
            case ZSTD -> compress(new ZstdCompressor(), text);
            case LZ4 -> compress(new Lz4Compressor(), text);
        };
        int padded = (payload.length + 7) / 8 * 8;
        ByteBuffer entry = ByteBuffer.allocate(64 + padded).order(ByteOrder.LITTLE_ENDIAN);
        entry.putShort(0, (short) kind).putShort(2, (short) 0x101).putInt(4, 64).putInt(8, padded);
        entry.putInt(16, payload.length).putInt(28, architecture).putInt(32, 64);
        entry.putLong(
                40,
                switch (packing) {
                    case PLAIN -> 0x11L;
                    case ZSTD -> 0x8011L;
                    case LZ4 -> 0x2011L;
                });
        entry.putLong(56, packing == Packing.PLAIN ? 0 : text.length);
        entry.put(64, payload);
        return entry.array();
    }

    private static byte[] compress(io.airlift.compress.Compressor compressor, byte[] text) {
        byte[] out = new byte[compressor.maxCompressedLength(text.length)];
        int length = compressor.compress(text, 0, text.length, out, 0, out.length);
        return Arrays.copyOf(out, length);
    }

    private static byte[] fatbin(byte[]... entries) {
        ByteArrayOutputStream files = new ByteArrayOutputStream();
        for (byte[] entry : entries) {
            files.writeBytes(entry);
        }
        ByteBuffer header = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        header.putInt(0xba55ed50).putShort((short) 1).putShort((short) 16).putLong(files.size());
        ByteArrayOutputStream whole = new ByteArrayOutputStream();
        whole.writeBytes(header.array());
        whole.writeBytes(files.toByteArray());
        return whole.toByteArray();
    }

    private static byte[] text(String ptx) {
        return (ptx + "\0").getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void theNewestPtxIsReadWhateverItsCompression() {
        for (Packing packing : Packing.values()) {
            byte[] image = fatbin(
                    entry(2, 90, new byte[40], Packing.PLAIN),
                    entry(1, 90, text(NEWER), packing),
                    entry(1, 80, text(OLDER), packing));
            assertArrayEquals(text(NEWER), FatbinPtx.newest(image).orElseThrow(), packing.name());
        }
    }

    @Test
    void aFatbinOfCubinsAloneHasNoPtx() {
        assertTrue(FatbinPtx.newest(fatbin(entry(2, 90, new byte[40], Packing.PLAIN)))
                .isEmpty());
    }

    @Test
    void aTruncatedFatbinIsAnInvalidImage() {
        byte[] image = fatbin(entry(1, 80, text(OLDER), Packing.ZSTD));
        VgpuException e =
                assertThrows(VgpuException.class, () -> FatbinPtx.newest(Arrays.copyOf(image, image.length - 8)));
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_IMAGE, e.code());
        byte[] corrupt = image.clone();
        Arrays.fill(corrupt, 16 + 64, corrupt.length, (byte) 0x55);
        assertEquals(
                ErrorCode.CUDA_ERROR_INVALID_IMAGE,
                assertThrows(VgpuException.class, () -> FatbinPtx.newest(corrupt))
                        .code());
    }
}
