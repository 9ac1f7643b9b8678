package org.vgpu.job;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.common.cli.Durations;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.common.net.Endpoint;
import org.vgpu.runtime.api.VaWindow;

/**
 * A Slurm job's assembly of vGPUs on this node, as the SPANK bridge exports it into the job's
 * environment (slurm-spank-bridge/README.md, "Environment of the job's tasks"), read and checked
 * once by {@link #fromEnvironment}.
 *
 * @param vgpus       every vGPU, in index order: the job's, index k at position k, or a task's share of them
 *                    ({@link #share}), consecutive indices from its first
 * @param windowBase  vGPU k's address window starts at {@code windowBase + k * 256 GiB}
 * @param agentSocket where the migration agent listens for the tracker; empty: no agent
 * @param migration   whether the tracker may move the job's vGPUs ({@code --vgpu-migrate})
 * @param node        the node the assembly is for, when given
 * @param source      who made the assembly
 * @param tracker     the tracker's address ({@code host:port} or {@code unix:/path}), when given
 * @param job         the Slurm job id (SLURM_JOB_ID), when given: the agent's polls of the tracker name it
 * @param expectedRuntime how long the user expects the job's program to run from its start
 *                    ({@value #EXPECTED_RUNTIME_VARIABLE}, or {@code vgpu run --expected-runtime}); empty: no hint
 */
public record JobAssembly(
        List<Vgpu> vgpus,
        long windowBase,
        Optional<Path> agentSocket,
        Migration migration,
        Optional<String> node,
        Source source,
        Optional<String> tracker,
        Optional<String> job,
        Optional<Duration> expectedRuntime) {
    /** The most vGPUs the bridge gives a job on one node. */
    public static final int MAX_VGPUS = BridgeContract.VGPUS_MAX;

    /** The user's hint of the program's runtime, for programs started without vgpu run's flags. */
    public static final String EXPECTED_RUNTIME_VARIABLE = BridgeContract.ENV_EXPECTED_RUNTIME;

    /** The longest runtime hint taken: a job expected to run longer than a year has no end worth planning for. */
    public static final Duration EXPECTED_RUNTIME_MAX = Duration.ofDays(365);

    /** One vGPU of the assembly. */
    public sealed interface Vgpu permits Local, Remote {
        int index();
    }

    /**
     * A GPU of this node.
     *
     * @param nodeGpu its index on the node, as nvidia-smi and gres.conf number GPUs (Slurm's index, the minor of
     *                /dev/nvidiaN); which CUDA ordinal drives it is {@link CudaOrdinals}'s to find
     */
    public record Local(int index, int nodeGpu) implements Vgpu {}

    /**
     * A GPU worker on a lender node, with the session token the tracker issued for it. The token is
     * a bearer credential: {@link #toString} leaves it out, and so does every message about it.
     */
    public record Remote(int index, Endpoint worker, String token) implements Vgpu {
        public Remote {
            Objects.requireNonNull(worker, "worker");
            Objects.requireNonNull(token, "token");
        }

        @Override
        public String toString() {
            return "Remote[index=" + index + ", worker=" + worker + ", token=(" + token.length() + " chars)]";
        }
    }

    /** {@code VGPU_MIGRATE}: {@code auto}, the tracker may move vGPUs; {@code never}, they stay. */
    public enum Migration {
        AUTO,
        NEVER;

        public String text() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** {@code VGPU_SOURCE}: the tracker planned the assembly, or the bridge fell back to the job's own GPUs. */
    public enum Source {
        TRACKER(BridgeContract.SOURCE_TRACKER),
        LOCAL_ONLY_FALLBACK(BridgeContract.SOURCE_LOCAL_ONLY_FALLBACK);

        private final String text;

        Source(String text) {
            this.text = text;
        }

        public String text() {
            return text;
        }
    }

    public JobAssembly {
        vgpus = List.copyOf(vgpus);
        if (vgpus.isEmpty() || vgpus.size() > MAX_VGPUS) {
            throw invalid("an assembly has 1 to " + MAX_VGPUS + " vGPUs, got " + vgpus.size());
        }
        int first = vgpus.getFirst().index();
        for (int k = 0; k < vgpus.size(); k++) {
            if (vgpus.get(k).index() != first + k) {
                throw invalid(
                        "vGPU at position " + k + " has index " + vgpus.get(k).index() + ", expected " + (first + k));
            }
        }
        if (first + vgpus.size() > MAX_VGPUS) {
            throw invalid("vGPU " + (first + vgpus.size() - 1) + " is beyond the " + MAX_VGPUS + " a job may have");
        }
        windowOf(windowBase, first + vgpus.size() - 1);
        Objects.requireNonNull(agentSocket, "agentSocket");
        Objects.requireNonNull(migration, "migration");
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(tracker, "tracker");
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(expectedRuntime, "expectedRuntime");
    }

    /**
     * The assembly in {@code environment}, or empty when it has none of the bridge's variables (not
     * a vgpu job).
     *
     * @throws ConfigException INVALID naming the variable that is missing, malformed or inconsistent
     *         with the others, and what was expected
     */
    public static Optional<JobAssembly> fromEnvironment(Map<String, String> environment) {
        return AssemblyEnvironment.parse(environment);
    }

    /** How many vGPUs: the job's, or its task's share. */
    public int count() {
        return vgpus.size();
    }

    /** The first vGPU's index: 0, or where a task's share begins. */
    public int firstIndex() {
        return vgpus.getFirst().index();
    }

    /** Whether vGPU {@code k} (an index of the job) is in this assembly. */
    public boolean has(int k) {
        return k >= firstIndex() && k < firstIndex() + vgpus.size();
    }

    /**
     * A task's share of this assembly: vGPUs {@code first} to {@code first + count - 1}, its own migration agent on a
     * socket of its own beside the job's ({@code agent.sock} gives {@code agent.sock.vgpus-2-3}), everything else as
     * the job's.
     */
    JobAssembly share(TaskShare share) {
        if (!has(share.first()) || !has(share.last())) {
            throw invalid(TaskShare.VARIABLE + " '" + share.text() + "' is not within this job's vGPUs " + firstIndex()
                    + "-" + (firstIndex() + count() - 1));
        }
        Optional<Path> socket =
                agentSocket.map(path -> path.resolveSibling(path.getFileName() + ".vgpus-" + share.text()));
        return new JobAssembly(
                vgpus.subList(share.first() - firstIndex(), share.last() - firstIndex() + 1),
                windowBase,
                socket,
                migration,
                node,
                source,
                tracker,
                job,
                expectedRuntime);
    }

    /**
     * A runtime hint as the user writes it ({@code 45m}, {@code 2h}, {@code 1d}): whole seconds, at least 1 s and at
     * most {@link #EXPECTED_RUNTIME_MAX}.
     *
     * @throws IllegalArgumentException saying what was expected
     */
    public static Duration expectedRuntime(String text) {
        Duration runtime = Durations.parse(text);
        // The longest first: a Duration can hold more milliseconds than a long (found by JobEnvironmentFuzzTest).
        if (runtime.compareTo(EXPECTED_RUNTIME_MAX) > 0) {
            throw new IllegalArgumentException(
                    "'" + text + "' is longer than " + EXPECTED_RUNTIME_MAX.toDays() + "d, the longest runtime hint");
        }
        if (runtime.toMillis() % 1000 != 0 || runtime.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException(
                    "'" + text + "' is not a runtime; expected at least 1 s in whole seconds, e.g. 45m or 2h");
        }
        return runtime;
    }

    /** This assembly with the user's runtime hint (vgpu run's {@code --expected-runtime} overrides the variable). */
    public JobAssembly withExpectedRuntime(Duration runtime) {
        return new JobAssembly(
                vgpus, windowBase, agentSocket, migration, node, source, tracker, job, Optional.of(runtime));
    }

    /** When the job's program expects to end if it started at {@code start}, in whole seconds; empty: no hint. */
    public Optional<Instant> expectedEnd(Instant start) {
        return expectedRuntime.map(runtime -> start.plus(runtime).truncatedTo(ChronoUnit.SECONDS));
    }

    /** vGPU {@code k}, an index of the job. */
    public Vgpu vgpu(int k) {
        if (!has(k)) {
            throw invalid(notHere(k));
        }
        return vgpus.get(k - firstIndex());
    }

    /** vGPU k's address window: {@link VaWindow#DEFAULT_SIZE} bytes from {@code windowBase + k * DEFAULT_SIZE}. */
    public VaWindow window(int k) {
        if (!has(k)) {
            throw invalid(notHere(k));
        }
        return windowOf(windowBase, k);
    }

    private String notHere(int k) {
        return "vGPU " + k + " is not in this job's assembly of " + vgpus.size()
                + (firstIndex() == 0
                        ? ""
                        : " (this task's share: vGPUs " + firstIndex() + " to " + (firstIndex() + vgpus.size() - 1)
                                + ")");
    }

    /** Window k from {@code base}; VaWindow refuses a base that is unaligned or puts it beyond the user address space. */
    static VaWindow windowOf(long base, int k) {
        return new VaWindow(k, base + k * VaWindow.DEFAULT_SIZE, VaWindow.DEFAULT_SIZE);
    }

    public long localCount() {
        return vgpus.stream().filter(Local.class::isInstance).count();
    }

    public long remoteCount() {
        return vgpus.stream().filter(Remote.class::isInstance).count();
    }

    /** The node GPUs of the job's local vGPUs, in vGPU order (VGPU_LOCAL_GPUS): those the job is granted at start. */
    public List<Integer> localGpus() {
        return vgpus.stream()
                .filter(Local.class::isInstance)
                .map(Local.class::cast)
                .map(Local::nodeGpu)
                .toList();
    }

    /** {@link #localGpus()} as text: "2,3", or "none". */
    public String localGpusText() {
        List<Integer> gpus = localGpus();
        return gpus.isEmpty()
                ? "none"
                : String.join(",", gpus.stream().map(String::valueOf).toList());
    }

    /** The first borrowed vGPU, whose session token the agent's polls of the tracker carry; empty: none is borrowed. */
    public Optional<Remote> firstRemote() {
        return vgpus.stream()
                .filter(Remote.class::isInstance)
                .map(Remote.class::cast)
                .findFirst();
    }

    /** The session token of remote vGPU {@code k} if it runs on {@code worker}. */
    public Optional<String> tokenFor(int k, Endpoint worker) {
        if (!has(k)) {
            return Optional.empty();
        }
        return vgpus.get(k - firstIndex()) instanceof Remote remote
                        && remote.worker().equals(worker)
                ? Optional.of(remote.token())
                : Optional.empty();
    }

    /** The assembly is the job's configuration: a wrong one is a configuration error, not a GPU call's. */
    static ConfigException invalid(String detail) {
        return new ConfigException(ConfigException.Code.INVALID, detail);
    }
}
