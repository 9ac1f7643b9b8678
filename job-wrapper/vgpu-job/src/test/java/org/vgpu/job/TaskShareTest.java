package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.InputException;

/** Which of the job's vGPUs each task of a Slurm step uses, from Slurm's own variables, and the assembly it sees. */
class TaskShareTest {
    private static Map<String, String> step(String tasksPerNode, String nodeId, String localId) {
        Map<String, String> environment = new HashMap<>();
        environment.put("SLURM_STEP_TASKS_PER_NODE", tasksPerNode);
        environment.put("SLURM_NODEID", nodeId);
        environment.put("SLURM_LOCALID", localId);
        return environment;
    }

    @ParameterizedTest(name = "{0} tasks per node, node {1}, task {2}, {3} vGPUs: {4}")
    @CsvSource({
        "3,        0, 0, 3, 0-0",
        "3,        0, 2, 3, 2-2",
        "2,        0, 1, 4, 2-3",
        "4,        0, 3, 8, 6-7",
        "'2(x3),1', 2, 1, 2, 1-1",
        "'1,4',    1, 3, 4, 3-3",
    })
    void eachTaskGetsItsEqualShareInTaskOrder(String perNode, String nodeId, String localId, int vgpus, String share) {
        assertEquals(
                Optional.of(share),
                TaskShare.forStep(step(perNode, nodeId, localId), vgpus).map(TaskShare::text));
    }

    @Test
    void aStepOfOneTaskOnTheNodeOrNoStepUsesEveryVgpu() {
        assertEquals(Optional.empty(), TaskShare.forStep(step("1", "0", "0"), 3));
        assertEquals(Optional.empty(), TaskShare.forStep(step("2(x2),1", "2", "0"), 3));
        assertEquals(Optional.empty(), TaskShare.forStep(Map.of(), 3), "not inside a step's task");
        assertEquals(Optional.empty(), TaskShare.forStep(Map.of("SLURM_LOCALID", "0"), 3));
    }

    @Test
    void tasksThatCannotShareEquallyAreToldWhatToSubmit() {
        InputException refused = assertThrows(InputException.class, () -> TaskShare.forStep(step("2", "0", "0"), 3));
        assertEquals(
                "this step runs 2 tasks on this node and the job has 3 vGPUs, which do not divide equally among them:"
                        + " each task gets its own vGPUs, so submit with --gres=vgpu:N where N is a multiple of 2 (e.g."
                        + " 2 for one vGPU per task), or run 1 or 3 task(s) per node",
                refused.detail());
        InputException more = assertThrows(InputException.class, () -> TaskShare.forStep(step("4", "0", "0"), 1));
        assertTrue(more.detail().endsWith("or run 1 task(s) per node"), more.detail());
    }

    @ParameterizedTest(name = "{0} / {1} / {2}")
    @CsvSource({
        "'',      0, 0, 'SLURM_STEP_TASKS_PER_NODE is ''''; expected Slurm''s form, e.g. 3 or 2(x3),1'",
        "'2(x)',  0, 0, 'SLURM_STEP_TASKS_PER_NODE is ''2(x)''; expected Slurm''s form, e.g. 3 or 2(x3),1'",
        "'0',     0, 0, 'SLURM_STEP_TASKS_PER_NODE is ''0''; expected Slurm''s form, e.g. 3 or 2(x3),1'",
        "2,       1, 0, SLURM_NODEID is 1 but SLURM_STEP_TASKS_PER_NODE ('2') lists 1 node(s)",
        "2,       0, 2, SLURM_LOCALID is 2 but the step runs 2 task(s) on this node (SLURM_STEP_TASKS_PER_NODE=2)",
        "2,       0, -1, 'SLURM_LOCALID is ''-1''; expected a whole number from 0'",
        "2,       x, 0, 'SLURM_NODEID is ''x''; expected a whole number from 0'",
    })
    void malformedSlurmVariablesAreNamed(String perNode, String nodeId, String localId, String message) {
        InputException refused =
                assertThrows(InputException.class, () -> TaskShare.forStep(step(perNode, nodeId, localId), 4));
        assertEquals(message, refused.detail());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "1-2,   ",
        "2-1,   'VGPU_TASK_VGPUS is ''2-1'' but the job''s vGPUs are 0-3; expected FIRST <= LAST within them'",
        "3-4,   'VGPU_TASK_VGPUS is ''3-4'' but the job''s vGPUs are 0-3; expected FIRST <= LAST within them'",
        "1,     'VGPU_TASK_VGPUS must be FIRST-LAST (vGPU indices of the job), got ''1'''",
        "01-2,  'VGPU_TASK_VGPUS must be FIRST-LAST (vGPU indices of the job), got ''01-2'''",
    })
    void theVariableVgpuRunHandsTheProgramIsChecked(String text, String message) {
        if (message == null) {
            assertEquals(new TaskShare(1, 2), TaskShare.parse(text, 4));
        } else {
            ConfigException refused = assertThrows(ConfigException.class, () -> TaskShare.parse(text, 4));
            assertEquals(message, refused.detail());
        }
    }

    @Test
    void aTasksAssemblyHoldsItsShareWithTheJobsIndicesWindowsAndAnAgentSocketOfItsOwn() {
        Map<String, String> environment = JobAssemblyTest.bridgeExample();
        environment.put(TaskShare.VARIABLE, "1-2");
        JobAssembly job =
                JobAssembly.fromEnvironment(JobAssemblyTest.bridgeExample()).orElseThrow();
        JobAssembly task = JobAssembly.fromEnvironment(environment).orElseThrow();

        assertEquals(job.vgpus().subList(1, 3), task.vgpus());
        assertEquals(2, task.count());
        assertEquals(1, task.firstIndex());
        assertEquals(job.window(2), task.window(2), "vGPU 2's window is the job's");
        assertFalse(task.has(0));
        assertThrows(ConfigException.class, () -> task.window(0));
        assertEquals(Optional.of(Path.of("/run/vgpu/vgpu-42-n1.sock.vgpus-1-2")), task.agentSocket());
        assertEquals(job.vgpu(1), task.firstRemote().orElseThrow(), "its agent polls with its own borrowed vGPU");
        assertEquals(List.of(3), task.localGpus());
    }
}
