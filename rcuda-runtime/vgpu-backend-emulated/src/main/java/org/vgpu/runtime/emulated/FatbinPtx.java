package org.vgpu.runtime.emulated;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Optional;

import io.airlift.compress.MalformedInputException;
import io.airlift.compress.lz4.Lz4Decompressor;
import io.airlift.compress.zstd.ZstdDecompressor;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The PTX of the newest virtual architecture a fatbin carries, as text: the CPU emulation reads a fatbin's kernels
 * and variables from it, as it reads a PTX module's (the CUDA runtime loads a program's kernels as fatbins). A
 * fatbin is a header ({@code magic, version, header size, size of its entries}) and entries, each with a header
 * that says its kind (1: PTX, 2: a cubin), its architecture, its payload's size and how the payload is compressed
 * (nvcc 13 compresses PTX with zstd, earlier ones with LZ4).
 */
final class FatbinPtx {
    private static final int FATBIN_MAGIC = 0xba55ed50;
    private static final int KIND_PTX = 1;
    private static final long COMPRESSED_LZ4 = 0x2000;
    private static final long COMPRESSED_ZSTD = 0x8000;
    private static final int ENTRY_HEADER_BYTES = 64;

    private FatbinPtx() {}

    /** The newest PTX of {@code fatbin}, NUL-terminated; empty when it carries none. */
    static Optional<byte[]> newest(byte[] fatbin) {
        ByteBuffer in = ByteBuffer.wrap(fatbin).order(ByteOrder.LITTLE_ENDIAN);
        if (fatbin.length < 16 || in.getInt(0) != FATBIN_MAGIC) {
            throw invalid("it does not start with a fatbin header");
        }
        long end = in.getShort(6) + in.getLong(8);
        if (end > fatbin.length) {
            throw invalid("its header says " + end + " bytes, the image has " + fatbin.length);
        }
        int at = in.getShort(6);
        int newestArchitecture = -1;
        byte[] newest = null;
        while (at + ENTRY_HEADER_BYTES <= end) {
            int kind = in.getShort(at);
            int headerBytes = in.getInt(at + 4);
            long paddedBytes = Integer.toUnsignedLong(in.getInt(at + 8));
            int payloadBytes = in.getInt(at + 16);
            int architecture = in.getInt(at + 28);
            long flags = in.getLong(at + 40);
            long plainBytes = in.getLong(at + 56);
            if (headerBytes < ENTRY_HEADER_BYTES || at + headerBytes + paddedBytes > end || payloadBytes < 0) {
                throw invalid("an entry at byte " + at + " reaches past the fatbin's end");
            }
            if (kind == KIND_PTX && architecture > newestArchitecture) {
                newestArchitecture = architecture;
                newest = payload(fatbin, at + headerBytes, payloadBytes, flags, plainBytes);
            }
            at += (int) (headerBytes + paddedBytes);
        }
        return Optional.ofNullable(newest);
    }

    private static byte[] payload(byte[] fatbin, int at, int bytes, long flags, long plainBytes) {
        if ((flags & (COMPRESSED_LZ4 | COMPRESSED_ZSTD)) == 0) {
            return terminated(Arrays.copyOfRange(fatbin, at, at + bytes), bytes);
        }
        if (plainBytes <= 0 || plainBytes > Integer.MAX_VALUE - 1) {
            throw invalid("a compressed PTX entry says it is " + plainBytes + " bytes uncompressed");
        }
        byte[] plain = new byte[(int) plainBytes + 1];
        try {
            int length = (flags & COMPRESSED_ZSTD) != 0
                    ? new ZstdDecompressor().decompress(fatbin, at, bytes, plain, 0, (int) plainBytes)
                    : new Lz4Decompressor().decompress(fatbin, at, bytes, plain, 0, (int) plainBytes);
            return terminated(plain, length);
        } catch (MalformedInputException e) {
            throw invalid("its compressed PTX cannot be decompressed: " + e.getMessage());
        }
    }

    /** The text up to its first NUL or {@code length}, with a NUL after it. */
    private static byte[] terminated(byte[] text, int length) {
        int nul = 0;
        while (nul < length && text[nul] != 0) {
            nul++;
        }
        return Arrays.copyOf(text, nul + 1);
    }

    private static VgpuException invalid(String why) {
        return new VgpuException(ErrorCode.CUDA_ERROR_INVALID_IMAGE, "fatbin cannot be read: " + why);
    }
}
