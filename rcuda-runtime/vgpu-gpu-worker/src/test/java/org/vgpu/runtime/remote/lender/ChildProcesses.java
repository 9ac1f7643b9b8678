package org.vgpu.runtime.remote.lender;

import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Checks that a test left none of its processes running. Only children of this JVM that were not
 * there when the test began count: test classes share the JVM, and another class's leftovers are
 * neither this test's fault nor its to stop.
 */
final class ChildProcesses {
    private final Set<Long> before;

    private ChildProcesses(Set<Long> before) {
        this.before = before;
    }

    /** Notes the children that already run, before the test starts any. */
    static ChildProcesses snapshot() {
        return new ChildProcesses(
                ProcessHandle.current().children().map(ProcessHandle::pid).collect(Collectors.toSet()));
    }

    /** Kills the live children started since the snapshot and returns their pids and command lines: empty when the test cleaned up. */
    List<String> killLeftovers() {
        List<ProcessHandle> alive = started();
        for (ProcessHandle child : alive) {
            child.destroyForcibly();
            child.onExit().orTimeout(10, TimeUnit.SECONDS).join();
        }
        return alive.stream()
                .map(child -> child.pid() + " " + child.info().commandLine().orElse("?"))
                .toList();
    }

    /** The live children started since the snapshot. */
    List<ProcessHandle> started() {
        return ProcessHandle.current()
                .children()
                .filter(child -> child.isAlive() && !before.contains(child.pid()))
                .toList();
    }
}
