package org.vgpu.runtime.core;

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
 * declares with their parameter sizes. The bytes are kept because a migration replays the load.
 */
public record ModuleImage(byte[] bytes, Format format, Map<String, KernelSignature> ptxKernels) {

    public enum Format {
        PTX,
        CUBIN,
        FATBIN
    }

    private static final Pattern ENTRY = Pattern.compile("\\.entry\\s+([A-Za-z_$][\\w$]*)\\s*(\\(([^)]*)\\))?");
    private static final Pattern PARAM_TYPE = Pattern.compile("\\.[bsuf](8|16|32|64)\\b");
    private static final Pattern ARRAY = Pattern.compile("\\[(\\d+)]");

    public ModuleImage {
        ptxKernels = Map.copyOf(ptxKernels);
    }

    /** Classifies and, for PTX, parses {@code image}; CUDA_ERROR_INVALID_IMAGE when it is neither. */
    public static ModuleImage parse(byte[] image) {
        if (image == null || image.length < 4) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_IMAGE, "module image is empty or shorter than 4 bytes");
        }
        if (image[0] == 0x7f && image[1] == 'E' && image[2] == 'L' && image[3] == 'F') {
            return new ModuleImage(image.clone(), Format.CUBIN, Map.of());
        }
        if ((image[0] & 0xff) == 0x50
                && (image[1] & 0xff) == 0xed
                && (image[2] & 0xff) == 0x55
                && (image[3] & 0xff) == 0xba) {
            return new ModuleImage(image.clone(), Format.FATBIN, Map.of());
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
        return new ModuleImage(image.clone(), Format.PTX, parsePtxEntries(text));
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
