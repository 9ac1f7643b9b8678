package org.vgpu.job;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.InputException;

/**
 * The vGPUs one task of a Slurm step uses, when the step runs several tasks on this node ({@code srun -n 3 vgpu run --
 * ./app}): each task's {@code vgpu run} opens its own share of the job's vGPUs, never all of them, so that no vGPU is
 * opened twice and each task's migration agent moves only its own. The rule: with T tasks on the node and V vGPUs,
 * T must divide V, and the task with {@code SLURM_LOCALID} i gets vGPUs {@code i*V/T} to {@code (i+1)*V/T - 1}; its
 * CUDA device d is the share's d-th vGPU. A step of one task on the node uses every vGPU, as before.
 *
 * <p>vgpu run works the share out from Slurm's variables and hands it to the program as {@value
 * BridgeContract#ENV_TASK_VGPUS} ({@code FIRST-LAST}), which the program's JVM ({@link AssemblyEnvironment}) and vgpu's
 * libcuda.so.1 read, so that the rule lives here only.
 *
 * @param first the share's first vGPU index of the job
 * @param count how many vGPUs, from {@code first}
 */
record TaskShare(int first, int count) {
    static final String VARIABLE = BridgeContract.ENV_TASK_VGPUS;
    /** The task's number among the step's tasks on this node, from 0 (Slurm sets it in every task). */
    static final String LOCAL_ID = "SLURM_LOCALID";
    /** The step's tasks on each of its nodes, in node order: {@code 3}, {@code 2(x3),1} (Slurm's compressed form). */
    static final String STEP_TASKS_PER_NODE = "SLURM_STEP_TASKS_PER_NODE";
    /** This node's position among the job's nodes, from 0 (a vgpu job has one node: 0). */
    static final String NODE_ID = "SLURM_NODEID";

    private static final Pattern RANGE = Pattern.compile("(0|[1-9][0-9]{0,2})-(0|[1-9][0-9]{0,2})");
    private static final Pattern TASKS = Pattern.compile("([1-9][0-9]{0,5})(?:\\(x([1-9][0-9]{0,5})\\))?");
    private static final Pattern DECIMAL = Pattern.compile("0|[1-9][0-9]{0,5}");

    /** The share's last vGPU index. */
    int last() {
        return first + count - 1;
    }

    /** As {@value #VARIABLE} says it: {@code FIRST-LAST}. */
    String text() {
        return first + "-" + last();
    }

    /**
     * This task's share of the job's {@code vgpus} vGPUs, or empty when it uses them all (no step of several tasks
     * here, or not inside a step).
     *
     * @throws InputException when the step's tasks on this node cannot share the vGPUs equally, or Slurm's variables
     *         are malformed, saying what to do
     */
    static Optional<TaskShare> forStep(Map<String, String> environment, int vgpus) {
        String localId = environment.get(LOCAL_ID);
        String perNode = environment.get(STEP_TASKS_PER_NODE);
        if (localId == null || perNode == null) {
            return Optional.empty();
        }
        int node = number(NODE_ID, environment.getOrDefault(NODE_ID, "0"));
        int onThisNode = tasksOnNode(perNode, node);
        int task = number(LOCAL_ID, localId);
        if (task >= onThisNode) {
            throw new InputException(LOCAL_ID + " is " + task + " but the step runs " + onThisNode
                    + " task(s) on this node (" + STEP_TASKS_PER_NODE + "=" + perNode + ")");
        }
        if (onThisNode == 1) {
            return Optional.empty();
        }
        if (vgpus % onThisNode != 0) {
            throw new InputException("this step runs " + onThisNode + " tasks on this node and the job has " + vgpus
                    + " vGPUs, which do not divide equally among them: each task gets its own vGPUs, so submit with"
                    + " --gres=vgpu:N where N is a multiple of " + onThisNode + " (e.g. " + onThisNode
                    + " for one vGPU per task), or run " + vgpusDividing(vgpus) + " task(s) per node");
        }
        int each = vgpus / onThisNode;
        return Optional.of(new TaskShare(task * each, each));
    }

    /**
     * The share {@value #VARIABLE} names, checked against the job's {@code vgpus} vGPUs.
     *
     * @throws ConfigException INVALID naming the variable and what was expected
     */
    static TaskShare parse(String text, int vgpus) {
        Matcher range = RANGE.matcher(text);
        if (!range.matches()) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    VARIABLE + " must be FIRST-LAST (vGPU indices of the job), got '" + text + "'");
        }
        int first = Integer.parseInt(range.group(1));
        int last = Integer.parseInt(range.group(2));
        if (first > last || last >= vgpus) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    VARIABLE + " is '" + text + "' but the job's vGPUs are 0-" + (vgpus - 1)
                            + "; expected FIRST <= LAST" + " within them");
        }
        return new TaskShare(first, last - first + 1);
    }

    /**
     * The tasks on node {@code node} in Slurm's compressed list ({@code 2(x3),1}: nodes 0-2 run 2, node 3 runs 1),
     * read entry by entry without expanding the repeats.
     */
    private static int tasksOnNode(String text, int node) {
        long nodesBefore = 0;
        Integer found = null;
        for (String entry : text.split(",", -1)) {
            Matcher matcher = TASKS.matcher(entry);
            if (!matcher.matches()) {
                throw new InputException(
                        STEP_TASKS_PER_NODE + " is '" + text + "'; expected Slurm's form, e.g. 3 or" + " 2(x3),1");
            }
            long repeat = matcher.group(2) == null ? 1 : Long.parseLong(matcher.group(2));
            if (found == null && node < nodesBefore + repeat) {
                found = Integer.parseInt(matcher.group(1));
            }
            nodesBefore += repeat;
        }
        if (found == null) {
            throw new InputException(NODE_ID + " is " + node + " but " + STEP_TASKS_PER_NODE + " ('" + text
                    + "') lists " + nodesBefore + " node(s)");
        }
        return found;
    }

    private static int number(String variable, String text) {
        if (!DECIMAL.matcher(text).matches()) {
            throw new InputException(variable + " is '" + text + "'; expected a whole number from 0");
        }
        return Integer.parseInt(text);
    }

    /** The task counts per node that share {@code vgpus} equally, as text: "1, 2 or 4". */
    private static String vgpusDividing(int vgpus) {
        List<String> counts = new ArrayList<>();
        for (int tasks = 1; tasks <= vgpus; tasks++) {
            if (vgpus % tasks == 0) {
                counts.add(Integer.toString(tasks));
            }
        }
        return counts.size() == 1
                ? counts.getFirst()
                : String.join(", ", counts.subList(0, counts.size() - 1)) + " or " + counts.getLast();
    }
}
