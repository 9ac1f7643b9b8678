package org.vgpu.simulator.input;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.vgpu.simulator.workload.WorkloadException;

/**
 * Every problem a reader finds in one file, each as {@code FILE:LINE: what is wrong; what is expected}, so that a
 * person fixes them all in one go rather than one per run.
 */
final class Problems {
    private final Path file;
    private final List<String> found = new ArrayList<>();

    Problems(Path file) {
        this.file = file;
    }

    void at(long line, String wrong, String expected) {
        found.add(file + ":" + line + ": " + wrong + "; " + expected);
    }

    /** A problem of the whole file rather than of one line. */
    void ofFile(String wrong, String expected) {
        found.add(file + ": " + wrong + "; " + expected);
    }

    int count() {
        return found.size();
    }

    void throwIfAny() throws WorkloadException {
        throwIfAny(this);
    }

    /** One exception with the problems of every file, in the order given. */
    static void throwIfAny(Problems... files) throws WorkloadException {
        List<String> all = new ArrayList<>();
        for (Problems problems : files) {
            all.addAll(problems.found);
        }
        if (!all.isEmpty()) {
            throw new WorkloadException(all);
        }
    }
}
