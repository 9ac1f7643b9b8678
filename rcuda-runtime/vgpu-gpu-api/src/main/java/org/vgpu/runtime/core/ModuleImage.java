package org.vgpu.runtime.core;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelSignature;
import org.vgpu.runtime.api.VgpuException;

/**
 * A module image as given to {@code moduleLoadData}, classified, and for PTX the kernels it
 * declares with their parameter sizes and the module-scope variables ({@code .global} and
 * {@code .const}) it defines, which the CPU emulation backs with memory. The bytes are kept
 * because a migration replays the load.
 */
public record ModuleImage(
        byte[] bytes, Format format, Map<String, KernelSignature> ptxKernels, Map<String, PtxGlobal> ptxGlobals) {

    /**
     * A module-scope variable of a PTX module: its size and its initial bytes (zeros unless the
     * declaration has an initialiser: integers, and floats as PTX writes them, {@code 0f} or
     * {@code 0d} and the hexadecimal bits), little-endian as on a GPU.
     */
    public record PtxGlobal(String name, long bytes, byte[] initialValue) {}

    public enum Format {
        PTX,
        CUBIN,
        FATBIN
    }

    private static final Pattern ENTRY = Pattern.compile("\\.entry\\s+([A-Za-z_$][\\w$]*)\\s*(\\(([^)]*)\\))?");
    private static final Pattern PARAM_TYPE = Pattern.compile("\\.[bsuf](8|16|32|64)\\b");
    private static final Pattern ARRAY = Pattern.compile("\\[(\\d+)]");

    /**
     * {@code [.visible|.weak] .global|.const [.align N] .TYPE name[[N]] [= value|{values}];} at the
     * start of a line; {@code .extern} declarations define nothing and are not matched.
     */
    private static final Pattern GLOBAL = Pattern.compile(
            "^[ \\t]*(?:\\.(?:visible|weak)[ \\t]+)?\\.(?:global|const)[ \\t]+(?:\\.align[ \\t]+\\d+[ \\t]+)?"
                    + "\\.[bsuf](8|16|32|64)[ \\t]+([A-Za-z_$][\\w$]*)[ \\t]*(?:\\[(\\d+)])?[ \\t]*"
                    + "(?:=[ \\t]*(\\{[^}]*}|[^;{]+))?[ \\t]*;",
            Pattern.MULTILINE);

    public ModuleImage {
        ptxKernels = Map.copyOf(ptxKernels);
        ptxGlobals = Map.copyOf(ptxGlobals);
    }

    /** Classifies and, for PTX, parses {@code image}; CUDA_ERROR_INVALID_IMAGE when it is neither. */
    public static ModuleImage parse(byte[] image) {
        if (image == null || image.length < 4) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_IMAGE, "module image is empty or shorter than 4 bytes");
        }
        if (image[0] == 0x7f && image[1] == 'E' && image[2] == 'L' && image[3] == 'F') {
            return new ModuleImage(image.clone(), Format.CUBIN, Map.of(), Map.of());
        }
        if ((image[0] & 0xff) == 0x50
                && (image[1] & 0xff) == 0xed
                && (image[2] & 0xff) == 0x55
                && (image[3] & 0xff) == 0xba) {
            return new ModuleImage(image.clone(), Format.FATBIN, Map.of(), Map.of());
        }
        String text = new String(image, StandardCharsets.US_ASCII);
        int nul = text.indexOf('\0');
        if (nul >= 0) {
            text = text.substring(0, nul);
        }
        if (!text.contains(".version") || !text.contains(".target")) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_IMAGE,
                    "module image is neither PTX (no .version/.target), a cubin (ELF) nor a fatbin");
        }
        return new ModuleImage(image.clone(), Format.PTX, parsePtxEntries(text), parsePtxGlobals(text));
    }

    private static Map<String, PtxGlobal> parsePtxGlobals(String ptx) {
        Map<String, PtxGlobal> globals = new LinkedHashMap<>();
        Matcher global = GLOBAL.matcher(ptx);
        while (global.find()) {
            String name = global.group(2);
            int elementBytes = Integer.parseInt(global.group(1)) / 8;
            long count = global.group(3) == null ? 1 : Long.parseLong(global.group(3));
            if (count <= 0 || count > Integer.MAX_VALUE / elementBytes) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_PTX, "module variable " + name + " has " + count + " elements");
            }
            ByteBuffer initial =
                    ByteBuffer.allocate((int) (count * elementBytes)).order(ByteOrder.LITTLE_ENDIAN);
            String values = global.group(4);
            if (values != null) {
                String list = values.strip();
                if (list.startsWith("{")) {
                    list = list.substring(1, list.length() - 1);
                }
                for (String value : list.split(",")) {
                    if (!initial.hasRemaining()) {
                        throw new VgpuException(
                                ErrorCode.CUDA_ERROR_INVALID_PTX,
                                "module variable " + name + " has more initial values than its " + count + " elements");
                    }
                    putElement(initial, elementBytes, parseValue(name, value.strip()));
                }
            }
            globals.put(name, new PtxGlobal(name, initial.capacity(), initial.array()));
        }
        return globals;
    }

    /** An integer, or a float's bits as PTX writes them ({@code 0fXXXXXXXX}, {@code 0dXXXXXXXXXXXXXXXX}). */
    private static long parseValue(String variable, String value) {
        try {
            if (value.startsWith("0f") || value.startsWith("0F") || value.startsWith("0d") || value.startsWith("0D")) {
                return Long.parseUnsignedLong(value.substring(2), 16);
            }
            if (value.startsWith("0x") || value.startsWith("0X")) {
                return Long.parseUnsignedLong(value.substring(2), 16);
            }
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_PTX,
                    "module variable " + variable + " has an initial value the CPU emulation cannot read: " + value);
        }
    }

    private static void putElement(ByteBuffer out, int elementBytes, long value) {
        switch (elementBytes) {
            case 1 -> out.put((byte) value);
            case 2 -> out.putShort((short) value);
            case 4 -> out.putInt((int) value);
            default -> out.putLong(value);
        }
    }

    /** The module-scope variable {@code name} of a PTX module; CUDA_ERROR_NOT_FOUND when it defines none. */
    public PtxGlobal ptxGlobal(String name) {
        PtxGlobal global = ptxGlobals.get(name);
        if (global == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_FOUND,
                    "module has no variable named '" + name + "' (it defines " + ptxGlobals.keySet() + ")");
        }
        return global;
    }

    private static Map<String, KernelSignature> parsePtxEntries(String ptx) {
        Map<String, KernelSignature> kernels = new LinkedHashMap<>();
        Matcher entry = ENTRY.matcher(ptx);
        while (entry.find()) {
            String name = entry.group(1);
            List<Integer> sizes = new ArrayList<>();
            String params = entry.group(3);
            if (params != null && !params.isBlank()) {
                for (String param : params.split(",")) {
                    sizes.add(paramSize(name, param));
                }
            }
            kernels.put(name, new KernelSignature(name, sizes));
        }
        return kernels;
    }

    private static int paramSize(String kernel, String param) {
        Matcher type = PARAM_TYPE.matcher(param);
        if (!type.find()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_PTX,
                    "cannot read the type of a parameter of kernel " + kernel + ": " + param.strip());
        }
        int size = Integer.parseInt(type.group(1)) / 8;
        Matcher array = ARRAY.matcher(param);
        return array.find() ? size * Integer.parseInt(array.group(1)) : size;
    }

    /** The declared signature of a PTX kernel; CUDA_ERROR_NOT_FOUND when the module has none of that name. */
    public KernelSignature ptxSignature(String kernelName) {
        KernelSignature signature = ptxKernels.get(kernelName);
        if (signature == null) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_FOUND,
                    "module has no kernel named '" + kernelName + "' (it declares " + ptxKernels.keySet() + ")");
        }
        return signature;
    }

    /** The image as the driver wants it: PTX NUL-terminated. */
    public byte[] driverImage() {
        if (format != Format.PTX || (bytes.length > 0 && bytes[bytes.length - 1] == 0)) {
            return bytes;
        }
        byte[] terminated = new byte[bytes.length + 1];
        System.arraycopy(bytes, 0, terminated, 0, bytes.length);
        return terminated;
    }
}
