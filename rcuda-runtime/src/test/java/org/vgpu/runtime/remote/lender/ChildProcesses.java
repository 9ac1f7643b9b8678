package org.vgpu.runtime.remote.lender;

import java.util.List;
import java.util.concurrent.TimeUnit;

/** Checks that a test left no process of its own running, and stops any it did leave. */
final class ChildProcesses {
    private ChildProcesses() {
    }

    /** Kills the live children of this JVM and returns their command lines: empty when the test cleaned up. */
    static List<String> killLeftovers() {
        List<ProcessHandle> alive = ProcessHandle.current().children().filter(ProcessHandle::isAlive).toList();
        for (ProcessHandle child : alive) {
            child.destroyForcibly();
            child.onExit().orTimeout(10, TimeUnit.SECONDS).join();
        }
        return alive.stream().map(child -> child.pid() + " " + child.info().commandLine().orElse("?")).toList();
    }
}
