package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link HookStory} on the CPU emulation (not a GPU): n2's worker serves emulated device 1, the job's node GPU 0 is
 * the emulation's device 0. The same story {@link HookOnGpuTest} tells on GPUs, here so that CI runs it.
 */
@Timeout(300)
class HookStoryTest {
    @TempDir
    Path dir;

    @Test
    void aGpuFreedOnTheJobsNodeTakesItsBorrowedVgpuHomeWhileTheMdRuns() throws Exception {
        HookStory.Told told = HookStory.tell("emulated", 1, dir, System.out, "hook story [emulated: CPU, not a GPU]: ");
        HookStory.assertTold(told, "emulated");
        assertEquals(0, told.homeDevice(), "n1's GPU 0 is the emulation's device 0");
    }
}
