package org.vgpu.tracker.cli;

import java.util.List;

import org.apache.commons.cli.ParseException;

import org.vgpu.common.line.TrackerAdminClient;

/**
 * {@code vgpu drain NODE}: asks the tracker to move every vGPU that NODE serves elsewhere (home to its job's node
 * when that has a free GPU) and prints what moves and what stays, and why; the tracker refuses when nothing moves.
 */
public final class DrainCommand extends AdminRequestCommand {
    @Override
    public String name() {
        return "drain";
    }

    @Override
    public String summary() {
        return "move every vGPU served from a node elsewhere, through the tracker (admins)";
    }

    @Override
    public String operands() {
        return "NODE";
    }

    @Override
    String request(List<String> operands) throws ParseException {
        if (operands.size() != 1) {
            throw new ParseException("give one NODE to drain");
        }
        return TrackerAdminClient.drainRequest(operands.getFirst());
    }
}
