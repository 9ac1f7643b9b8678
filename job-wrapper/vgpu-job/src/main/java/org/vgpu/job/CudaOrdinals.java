package org.vgpu.job;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.IoReasons;
import org.vgpu.runtime.DeferredNativeBackend;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;

/**
 * Which CUDA ordinal of this process drives node GPU N, Slurm's index (gres.conf's {@code File=/dev/nvidiaN}, N the
 * device minor, as nvidia-smi numbers GPUs). The job may see more GPUs than its own, since the tracker may grant it a
 * GPU freed beside it, so the ordinal is found, in this order:
 * <ol>
 *   <li>on a native backend, by PCI bus id, the one name CUDA and the driver share: the backend gives each ordinal's
 *       bus id ({@link GpuBackend#pciBusId}), and {@code /proc/driver/nvidia/gpus/<bus id>/information} says
 *       {@code Device Minor: N}; this holds whatever CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER say;</li>
 *   <li>else, when CUDA_VISIBLE_DEVICES lists GPU indices, ordinal i is the i-th listed (CUDA's numbering, which is
 *       Slurm's with CUDA_DEVICE_ORDER=PCI_BUS_ID);</li>
 *   <li>else, on the CPU emulation, ordinal N is GPU N (the emulation has a device for every index).</li>
 * </ol>
 * When none applies, or the GPU is not among those CUDA shows, opening it fails with a message that says why.
 */
final class CudaOrdinals {
    /** The driver's directory of GPUs, one per PCI bus id. */
    static final Path NVIDIA_GPUS = Path.of("/proc/driver/nvidia/gpus");

    private static final Pattern DEVICE_MINOR = Pattern.compile("(?m)^Device Minor:\\s*(\\d+)\\s*$");
    private static final Pattern BUS_ID =
            Pattern.compile("(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\\.([0-7])");
    private static final Pattern INDEX = Pattern.compile("0|[1-9][0-9]{0,8}");

    private final GpuBackend backend;
    private final Optional<List<String>> visible;
    private final Path nvidiaGpus;
    /** Node GPU by normalized bus id, read once; empty with {@link #procProblem} when it cannot be read. */
    private Map<String, Integer> minorsByBusId;

    private String procProblem;

    /**
     * @param cudaVisibleDevices CUDA_VISIBLE_DEVICES, when set
     * @param nvidiaGpus         {@link #NVIDIA_GPUS}, or a copy of its tree in tests
     */
    CudaOrdinals(Optional<String> cudaVisibleDevices, GpuBackend backend, Path nvidiaGpus) {
        this.backend = backend;
        this.visible = cudaVisibleDevices.map(text -> text.isEmpty() ? List.of() : List.of(text.split(",", -1)));
        this.nvidiaGpus = nvidiaGpus;
    }

    static CudaOrdinals of(Map<String, String> environment, GpuBackend backend) {
        return new CudaOrdinals(
                Optional.ofNullable(environment.get(BridgeContract.ENV_CUDA_VISIBLE_DEVICES)), backend, NVIDIA_GPUS);
    }

    /**
     * The CUDA ordinal that drives node GPU {@code nodeGpu}.
     *
     * @throws VgpuException CUDA_ERROR_INVALID_DEVICE saying why no ordinal of this process is that GPU
     */
    synchronized int ordinalOf(int nodeGpu) {
        if (!backend.isEmulation() && backend.deviceCount() == 0) {
            // A deferred native backend whose driver sees no GPU yet (DeferredNativeBackend): the grant's cgroup
            // admission has not happened, so no ordinal can be found, whatever the environment says.
            throw invalidDevice("GPU " + nodeGpu + " of this node cannot be driven: "
                    + DeferredNativeBackend.NONE_ADMITTED + " (the " + backend.name() + " backend sees no device)");
        }
        if (!backend.isEmulation()
                && backend.deviceCount() > 0
                && backend.pciBusId(0).isPresent()) {
            Map<String, Integer> minors = minorsByBusId();
            if (!minors.isEmpty()) {
                return byBusId(nodeGpu, minors);
            }
        }
        if (visible.isPresent()) {
            return byPosition(nodeGpu, visible.get());
        }
        if (backend.isEmulation()) {
            return checked(nodeGpu, nodeGpu, "the CPU emulation's device " + nodeGpu);
        }
        throw invalidDevice("which CUDA device is GPU " + nodeGpu + " of this node cannot be told: "
                + BridgeContract.ENV_CUDA_VISIBLE_DEVICES + " is not set and " + whyNoBusIds());
    }

    private int byBusId(int nodeGpu, Map<String, Integer> minors) {
        List<String> seen = new ArrayList<>();
        for (int ordinal = 0; ordinal < backend.deviceCount(); ordinal++) {
            String busId =
                    backend.pciBusId(ordinal).map(CudaOrdinals::normalized).orElse("?");
            Integer minor = minors.get(busId);
            if (minor != null && minor == nodeGpu) {
                return ordinal;
            }
            seen.add("CUDA device " + ordinal + " is " + (minor == null ? "bus " + busId : "GPU " + minor));
        }
        throw invalidDevice("GPU " + nodeGpu + " of this node is not among the GPUs CUDA shows this process ("
                + String.join(", ", seen) + ")"
                + visible.map(list ->
                                "; " + BridgeContract.ENV_CUDA_VISIBLE_DEVICES + " is '" + String.join(",", list) + "'")
                        .orElse(""));
    }

    private int byPosition(int nodeGpu, List<String> listed) {
        if (!listed.stream().allMatch(INDEX.asMatchPredicate())) {
            throw invalidDevice(BridgeContract.ENV_CUDA_VISIBLE_DEVICES + " names GPUs by UUID ('"
                    + String.join(",", listed) + "') and " + whyNoBusIds()
                    + ", so which CUDA device is GPU " + nodeGpu + " cannot be told");
        }
        int ordinal = listed.indexOf(Integer.toString(nodeGpu));
        if (ordinal < 0) {
            throw invalidDevice("GPU " + nodeGpu + " of this node is not in " + BridgeContract.ENV_CUDA_VISIBLE_DEVICES
                    + " ('" + String.join(",", listed) + "'), so CUDA does not show it to this process");
        }
        return checked(
                ordinal,
                nodeGpu,
                "CUDA device " + ordinal + " of the job (its place in " + BridgeContract.ENV_CUDA_VISIBLE_DEVICES + "="
                        + String.join(",", listed) + ")");
    }

    /** Why the PCI bus ids did not tell: the driver's directory could not be read, or the backend has none. */
    private String whyNoBusIds() {
        return procProblem != null ? procProblem : "the " + backend.name() + " backend's devices have no PCI bus ids";
    }

    private int checked(int ordinal, int nodeGpu, String what) {
        if (ordinal >= backend.deviceCount()) {
            throw invalidDevice(what + " drives GPU " + nodeGpu + " of this node, but the " + backend.name()
                    + " backend has " + backend.deviceCount() + " device(s)");
        }
        return ordinal;
    }

    private Map<String, Integer> minorsByBusId() {
        if (minorsByBusId == null) {
            minorsByBusId = readMinors();
        }
        return minorsByBusId;
    }

    private Map<String, Integer> readMinors() {
        Map<String, Integer> minors = new HashMap<>();
        try (Stream<Path> entries = Files.list(nvidiaGpus)) {
            for (Path entry : entries.toList()) {
                Path information = entry.resolve("information");
                Matcher minor = DEVICE_MINOR.matcher(Files.readString(information));
                String busId = normalized(entry.getFileName().toString());
                if (minor.find() && !busId.isEmpty()) {
                    minors.put(busId, Integer.parseInt(minor.group(1)));
                }
            }
        } catch (IOException | RuntimeException e) {
            procProblem = nvidiaGpus + " cannot be read ("
                    + (e instanceof IOException io ? IoReasons.of(io) : "unexpected content") + ")";
            return Map.of();
        }
        if (minors.isEmpty()) {
            procProblem = nvidiaGpus + " names no GPU with its Device Minor";
        }
        return minors;
    }

    /** {@code 00000000:3B:00.0} and {@code 0000:3b:00.0} alike as {@code 0000:3b:00.0}; empty when it is no bus id. */
    static String normalized(String busId) {
        Matcher parts = BUS_ID.matcher(busId.strip());
        if (!parts.matches()) {
            return "";
        }
        long domain = parts.group(1) == null ? 0 : Long.parseLong(parts.group(1), 16);
        return String.format(
                "%04x:%02x:%02x.%s",
                domain, Integer.parseInt(parts.group(2), 16), Integer.parseInt(parts.group(3), 16), parts.group(4));
    }

    private static VgpuException invalidDevice(String message) {
        return new VgpuException(ErrorCode.CUDA_ERROR_INVALID_DEVICE, message);
    }
}
