package org.vgpu.job;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.InputException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;
import org.vgpu.migration.MigrationTarget;

/**
 * Reads a {@link JobAssembly} from the variables the SPANK bridge exports, with the names, formats
 * and limits of the bridge contract (slurm-spank-bridge/contract/grammar.conf and limits.conf, as
 * {@link BridgeContract}). Every error is a {@link ConfigException} that names the variable and what
 * was expected; none quotes a session token.
 */
final class AssemblyEnvironment {
    static final String COUNT = BridgeContract.ENV_COUNT;
    static final String ASSEMBLY = BridgeContract.ENV_ASSEMBLY;
    static final String LOCAL_GPUS = BridgeContract.ENV_LOCAL_GPUS;
    static final String CUDA_VISIBLE_DEVICES = BridgeContract.ENV_CUDA_VISIBLE_DEVICES;
    static final String REMOTE = BridgeContract.ENV_REMOTE;
    static final String AGENT_SOCKET = BridgeContract.ENV_AGENT_SOCKET;
    static final String WINDOW_BASE = BridgeContract.ENV_WINDOW_BASE;
    static final String MIGRATE = BridgeContract.ENV_MIGRATE;
    static final String NODE = BridgeContract.ENV_NODE;
    static final String SOURCE = BridgeContract.ENV_SOURCE;
    static final String TRACKER = BridgeContract.ENV_TRACKER;
    /** Slurm's, not the bridge's: set in every step of every job. */
    static final String SLURM_JOB_ID = "SLURM_JOB_ID";
    /** The bridge's variables; CUDA_VISIBLE_DEVICES alone does not make a vgpu job. */
    static final List<String> BRIDGE_VARIABLES =
            List.of(COUNT, ASSEMBLY, LOCAL_GPUS, REMOTE, AGENT_SOCKET, WINDOW_BASE, MIGRATE, NODE, SOURCE, TRACKER);

    private static final Pattern DECIMAL = Pattern.compile("0|[1-9][0-9]{0,8}");
    private static final Pattern TOKEN = Pattern.compile(BridgeContract.TOKEN_CHAR_CLASS + "+");
    private static final Pattern NODE_NAME =
            Pattern.compile(BridgeContract.NODE_CHAR_CLASS + "{1," + BridgeContract.NODE_NAME_BYTES + "}");
    private static final Pattern HEX = Pattern.compile("0x[0-9a-fA-F]{1,16}");
    private static final String LOCAL_PREFIX = BridgeContract.PLACEMENT_LOCAL;
    private static final String REMOTE_PREFIX = BridgeContract.PLACEMENT_REMOTE;

    /** A vGPU as {@code VGPU_ASSEMBLY} places it: a node GPU, or a worker endpoint. */
    private record Placement(int index, int nodeGpu, Endpoint worker) {
        boolean local() {
            return worker == null;
        }
    }

    private final Map<String, String> environment;

    private AssemblyEnvironment(Map<String, String> environment) {
        this.environment = environment;
    }

    static Optional<JobAssembly> parse(Map<String, String> environment) {
        if (BRIDGE_VARIABLES.stream().noneMatch(environment::containsKey)) {
            return Optional.empty();
        }
        return Optional.of(new AssemblyEnvironment(environment).assembly());
    }

    private JobAssembly assembly() {
        int count = count();
        List<Placement> placements = placements(count);
        List<Integer> localGpus = localGpus();
        List<Integer> assembledLocal = placements.stream()
                .filter(Placement::local)
                .map(Placement::nodeGpu)
                .toList();
        if (!assembledLocal.equals(localGpus)) {
            throw invalid(LOCAL_GPUS + " is '" + required(LOCAL_GPUS) + "' but " + ASSEMBLY
                    + " places its local vGPUs on GPUs '" + joined(assembledLocal)
                    + "' (in vGPU order); they must agree");
        }
        checkCudaVisibleDevices(localGpus);
        Map<Integer, String> tokens = tokens(count, placements);
        JobAssembly.Source source = source();
        if (source == JobAssembly.Source.LOCAL_ONLY_FALLBACK && !tokens.isEmpty()) {
            throw invalid(SOURCE + " is local-only-fallback but " + ASSEMBLY + " has remote vGPUs " + tokens.keySet());
        }

        List<JobAssembly.Vgpu> vgpus = new ArrayList<>();
        for (Placement placement : placements) {
            vgpus.add(
                    placement.local()
                            ? new JobAssembly.Local(placement.index(), placement.nodeGpu())
                            : new JobAssembly.Remote(
                                    placement.index(), placement.worker(), tokens.get(placement.index())));
        }
        JobAssembly job = new JobAssembly(
                vgpus,
                windowBase(count),
                agentSocket(),
                migration(),
                node(),
                source,
                tracker(),
                job(),
                expectedRuntime());
        // vgpu run's share for one task of a step of several on this node (TaskShare)
        String share = environment.get(TaskShare.VARIABLE);
        return share == null ? job : job.share(TaskShare.parse(share, count));
    }

    // ---- VGPU_COUNT, VGPU_ASSEMBLY, VGPU_LOCAL_GPUS, CUDA_VISIBLE_DEVICES

    private int count() {
        String text = required(COUNT);
        if (!DECIMAL.matcher(text).matches()
                || Integer.parseInt(text) < 1
                || Integer.parseInt(text) > JobAssembly.MAX_VGPUS) {
            throw invalid(
                    COUNT + " must be a whole number from 1 to " + JobAssembly.MAX_VGPUS + ", got '" + text + "'");
        }
        return Integer.parseInt(text);
    }

    private List<Placement> placements(int count) {
        String text = required(ASSEMBLY);
        List<String> entries = items(text);
        if (entries.size() != count) {
            throw invalid(ASSEMBLY + " has " + entries.size() + " entries but " + COUNT + " is " + count
                    + "; expected one K=local:GPU or K=remote:HOST:PORT per vGPU");
        }
        List<Placement> placements = new ArrayList<>();
        Set<Integer> seen = new LinkedHashSet<>();
        for (String entry : entries) {
            Placement placement = placement(entry, count);
            if (!seen.add(placement.index())) {
                throw invalid(ASSEMBLY + " names vGPU " + placement.index() + " twice");
            }
            placements.add(placement);
        }
        for (int k = 0; k < count; k++) {
            if (placements.get(k).index() != k) {
                throw invalid(ASSEMBLY + " must list vGPUs 0 to " + (count - 1) + " in index order, but entry "
                        + (k + 1) + " is vGPU " + placements.get(k).index());
            }
        }
        return placements;
    }

    private static Placement placement(String entry, int count) {
        int equals = entry.indexOf('=');
        String expected = "; expected K=local:GPU or K=remote:HOST:PORT, got '" + entry + "'";
        if (equals < 0) {
            throw invalid(ASSEMBLY + " entry without '='" + expected);
        }
        int index = vgpuIndex(ASSEMBLY, entry.substring(0, equals), count);
        String where = entry.substring(equals + 1);
        if (where.startsWith(LOCAL_PREFIX)) {
            return new Placement(
                    index,
                    nodeGpu(ASSEMBLY + " entry for vGPU " + index, where.substring(LOCAL_PREFIX.length())),
                    null);
        }
        if (where.startsWith(REMOTE_PREFIX)) {
            return new Placement(
                    index, -1, worker(ASSEMBLY + " entry for vGPU " + index, where.substring(REMOTE_PREFIX.length())));
        }
        throw invalid(ASSEMBLY + " entry for vGPU " + index + " is neither local nor remote" + expected);
    }

    private List<Integer> localGpus() {
        List<Integer> gpus = new ArrayList<>();
        for (String item : items(required(LOCAL_GPUS))) {
            int gpu = nodeGpu(LOCAL_GPUS, item);
            if (gpus.contains(gpu)) {
                throw invalid(LOCAL_GPUS + " names GPU " + gpu + " twice");
            }
            gpus.add(gpu);
        }
        return gpus;
    }

    /**
     * A job may be granted node GPUs after it started, so CUDA may show it more than its own (CUDA_VISIBLE_DEVICES
     * unset, or listing more GPUs); the runtime opens only those granted ({@link JobGrants}) and finds which CUDA
     * ordinal is which GPU ({@link CudaOrdinals}). A list of GPU indices must show the job's own, or CUDA hides them.
     */
    private void checkCudaVisibleDevices(List<Integer> localGpus) {
        String visible = environment.get(CUDA_VISIBLE_DEVICES);
        if (visible == null || !items(visible).stream().allMatch(DECIMAL.asMatchPredicate())) {
            return; // every GPU, or GPUs by UUID: the job finds its own by PCI bus id
        }
        for (int gpu : localGpus) {
            if (!items(visible).contains(Integer.toString(gpu))) {
                throw invalid(CUDA_VISIBLE_DEVICES + " is '" + visible + "' and does not list GPU " + gpu + " of "
                        + LOCAL_GPUS + " ('" + joined(localGpus) + "'), so CUDA would hide the job's own GPU from it");
            }
        }
    }

    // ---- VGPU_REMOTE

    /** The token of every remote vGPU, by index; VGPU_REMOTE must name exactly the remote vGPUs of the assembly. */
    private Map<Integer, String> tokens(int count, List<Placement> placements) {
        String text = environment.getOrDefault(REMOTE, "");
        Map<Integer, String> tokens = new TreeMap<>();
        List<String> entries = items(text);
        for (int position = 0; position < entries.size(); position++) {
            String entry = entries.get(position);
            int at = entry.indexOf('@');
            int hash = entry.indexOf('#');
            if (at < 0 || hash < at) {
                // not quoted: a malformed entry may still hold a token
                throw invalid(REMOTE + " entry " + (position + 1) + " is not K@HOST:PORT#TOKEN (the entry is not shown:"
                        + " it may hold a session token)");
            }
            int index = vgpuIndex(REMOTE, entry.substring(0, at), count);
            Endpoint worker = worker(REMOTE + " entry for vGPU " + index, entry.substring(at + 1, hash));
            String token = entry.substring(hash + 1);
            checkToken(index, token);
            Placement placement = placements.get(index);
            if (placement.local()) {
                throw invalid(REMOTE + " has a token for vGPU " + index + ", which " + ASSEMBLY
                        + " places on local GPU " + placement.nodeGpu());
            }
            if (!placement.worker().equals(worker)) {
                throw invalid(REMOTE + " gives vGPU " + index + " the worker " + worker + " but " + ASSEMBLY
                        + " gives it " + placement.worker());
            }
            if (tokens.put(index, token) != null) {
                throw invalid(REMOTE + " names vGPU " + index + " twice");
            }
        }
        for (Placement placement : placements) {
            if (!placement.local() && !tokens.containsKey(placement.index())) {
                throw invalid(REMOTE + " has no session token for remote vGPU " + placement.index() + " ("
                        + placement.worker() + "); expected an entry " + placement.index() + "@" + placement.worker()
                        + "#TOKEN" + (environment.containsKey(REMOTE) ? "" : ", and " + REMOTE + " is not set"));
            }
        }
        return tokens;
    }

    private static void checkToken(int index, String token) {
        int bytes = token.getBytes(StandardCharsets.UTF_8).length;
        if (bytes < 1
                || bytes > BridgeContract.TOKEN_BYTES
                || !TOKEN.matcher(token).matches()) {
            throw invalid(REMOTE + ": the token of vGPU " + index + " must be 1 to " + BridgeContract.TOKEN_BYTES
                    + " bytes of [A-Za-z0-9" + BridgeContract.TOKEN_CHARS + "], got " + bytes
                    + " bytes that are not (token not shown)");
        }
    }

    // ---- the optional variables

    /** Absent: the bridge's default base; otherwise 0x and 1 to 16 hex digits, as the bridge writes it. */
    private long windowBase(int count) {
        String text = environment.get(WINDOW_BASE);
        if (text == null) {
            return BridgeContract.WINDOW_BASE_DEFAULT;
        }
        if (!HEX.matcher(text).matches()) {
            throw invalid(WINDOW_BASE + " must be 0x followed by 1 to 16 hex digits, got '" + text + "'");
        }
        long base = HexFormat.fromHexDigitsToLong(text.substring(2));
        long limit = BridgeContract.ADDRESS_LIMIT;
        long alignment = BridgeContract.WINDOW_ALIGNMENT;
        if (base == 0 || Long.remainderUnsigned(base, alignment) != 0) {
            throw invalid(String.format(
                    "%s must be a non-zero multiple of %d MiB (0x%x), got '%s'",
                    WINDOW_BASE, alignment >> 20, alignment, text));
        }
        if (Long.compareUnsigned(base, limit) >= 0 || (limit - base) / BridgeContract.WINDOW_BYTES < count) {
            throw invalid(String.format(
                    "%s '%s': %d windows of %d GiB from it do not fit below 0x%x, the end of the"
                            + " user address space",
                    WINDOW_BASE, text, count, BridgeContract.WINDOW_BYTES >> 30, limit));
        }
        return base;
    }

    private Optional<Path> agentSocket() {
        String text = environment.get(AGENT_SOCKET);
        if (text == null || text.isEmpty()) {
            return Optional.empty();
        }
        if (!text.startsWith("/")
                || text.getBytes(StandardCharsets.UTF_8).length > BridgeContract.SOCKET_PATH_BYTES
                || text.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            throw invalid(AGENT_SOCKET + " must be an absolute path of at most " + BridgeContract.SOCKET_PATH_BYTES
                    + " bytes without control characters, got '" + printable(text) + "'");
        }
        return Optional.of(Path.of(text));
    }

    private JobAssembly.Migration migration() {
        String text = environment.getOrDefault(MIGRATE, BridgeContract.MIGRATE_AUTO);
        return switch (text) {
            case BridgeContract.MIGRATE_AUTO -> JobAssembly.Migration.AUTO;
            case BridgeContract.MIGRATE_NEVER -> JobAssembly.Migration.NEVER;
            default ->
                throw invalid(MIGRATE + " must be " + BridgeContract.MIGRATE_AUTO + " or "
                        + BridgeContract.MIGRATE_NEVER + " (from --vgpu-migrate), got '" + printable(text) + "'");
        };
    }

    private Optional<String> node() {
        String text = environment.get(NODE);
        if (text == null) {
            return Optional.empty();
        }
        if (!NODE_NAME.matcher(text).matches()) {
            throw invalid(NODE + " must be a Slurm node name of 1 to " + BridgeContract.NODE_NAME_BYTES
                    + " letters, digits and " + BridgeContract.NODE_CHARS + ", got '" + printable(text) + "'");
        }
        return Optional.of(text);
    }

    private JobAssembly.Source source() {
        String text = environment.getOrDefault(SOURCE, JobAssembly.Source.TRACKER.text());
        for (JobAssembly.Source source : JobAssembly.Source.values()) {
            if (source.text().equals(text)) {
                return source;
            }
        }
        throw invalid(SOURCE + " must be " + BridgeContract.SOURCE_TRACKER + " or "
                + BridgeContract.SOURCE_LOCAL_ONLY_FALLBACK + ", got '" + printable(text) + "'");
    }

    /** SLURM_JOB_ID, when set: a Slurm job id. */
    private Optional<String> job() {
        String text = environment.get(SLURM_JOB_ID);
        if (text == null || text.isEmpty()) {
            return Optional.empty();
        }
        if (!Pattern.matches("[1-9][0-9]{0,9}", text) || Long.parseLong(text) > BridgeContract.JOB_ID_MAX) {
            throw invalid(SLURM_JOB_ID + " must be a Slurm job id from 1 to " + BridgeContract.JOB_ID_MAX + ", got '"
                    + printable(text) + "'");
        }
        return Optional.of(text);
    }

    /** The user's runtime hint, when set (not the bridge's: it passes the variable through). */
    private Optional<Duration> expectedRuntime() {
        String text = environment.get(JobAssembly.EXPECTED_RUNTIME_VARIABLE);
        if (text == null || text.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(JobAssembly.expectedRuntime(text));
        } catch (IllegalArgumentException e) {
            throw invalid(JobAssembly.EXPECTED_RUNTIME_VARIABLE + ": " + printable(e.getMessage()));
        }
    }

    /** HOST:PORT or unix:/PATH; kept as text, for the agent's reports to the tracker. */
    private Optional<String> tracker() {
        String text = environment.get(TRACKER);
        if (text == null || text.isEmpty()) {
            return Optional.empty();
        }
        if (text.startsWith("unix:")) {
            if (!text.startsWith("unix:/") || text.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
                throw invalid(TRACKER + " must be HOST:PORT or unix:/ABSOLUTE/PATH, got '" + printable(text) + "'");
            }
            return Optional.of(text);
        }
        try {
            Endpoint tracker = Endpoint.parse(text);
            if (tracker.port() == 0) {
                throw new InputException("port 0");
            }
        } catch (VgpuFailure e) {
            throw invalid(TRACKER + " must be HOST:PORT or unix:/ABSOLUTE/PATH, got '" + printable(text) + "' ("
                    + e.detail() + ")");
        }
        return Optional.of(text);
    }

    // ---- pieces

    private String required(String name) {
        String value = environment.get(name);
        if (value == null) {
            throw invalid(name + " is not set, but the job's environment has " + presentBridgeVariables()
                    + ": a vgpu job gets all of them from the SPANK bridge");
        }
        return value;
    }

    private String presentBridgeVariables() {
        return String.join(
                ", ", BRIDGE_VARIABLES.stream().filter(environment::containsKey).toList());
    }

    /** The items of a comma list; an empty text is an empty list (an empty item stays, and fails its parse). */
    private static List<String> items(String text) {
        return text.isEmpty() ? List.of() : List.of(text.split(",", -1));
    }

    private static int vgpuIndex(String variable, String text, int count) {
        if (!DECIMAL.matcher(text).matches() || Integer.parseInt(text) >= count) {
            throw invalid(variable + ": vGPU index must be a whole number from 0 to " + (count - 1) + " (" + COUNT
                    + " is " + count + "), got '" + printable(text) + "'");
        }
        return Integer.parseInt(text);
    }

    private static int nodeGpu(String where, String text) {
        if (!DECIMAL.matcher(text).matches() || Integer.parseInt(text) > BridgeContract.GPU_INDEX_MAX) {
            throw invalid(where + ": a GPU index must be a whole number from 0 to " + BridgeContract.GPU_INDEX_MAX
                    + " without leading zeros, got '" + printable(text) + "'");
        }
        return Integer.parseInt(text);
    }

    /** A worker endpoint one can connect to, checked as a migration target is. */
    private static Endpoint worker(String where, String text) {
        try {
            return new MigrationTarget.RemoteWorker(Endpoint.parse(text)).endpoint();
        } catch (VgpuFailure e) {
            throw invalid(where + ": expected HOST:PORT of a GPU worker (port 1 to 65535), got '" + printable(text)
                    + "' (" + e.detail() + ")");
        }
    }

    private static String joined(List<Integer> gpus) {
        return String.join(",", gpus.stream().map(String::valueOf).toList());
    }

    /** Control characters shown as '?', so a bad value cannot garble the terminal or the log. */
    private static String printable(String text) {
        StringBuilder shown = new StringBuilder();
        text.codePoints().forEach(c -> shown.appendCodePoint(c < 0x20 || c == 0x7f ? '?' : c));
        return shown.toString();
    }

    private static ConfigException invalid(String detail) {
        return JobAssembly.invalid(detail);
    }
}
