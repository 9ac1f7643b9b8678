package org.vgpu.tracker.cli;

import java.util.List;

import org.apache.commons.cli.ParseException;

/**
 * {@code vgpu hook pause|resume}: stops or restarts the tracker's own moves of borrowed vGPUs home; migrations under
 * way finish, and admins' {@code vgpu migrate} and {@code vgpu drain} still act.
 */
public final class HookCommand extends AdminRequestCommand {
    @Override
    public String name() {
        return "hook";
    }

    @Override
    public String summary() {
        return "pause or resume the tracker's migration hook (admins)";
    }

    @Override
    public String operands() {
        return "pause|resume";
    }

    @Override
    String request(List<String> operands) throws ParseException {
        if (operands.size() != 1
                || !(operands.getFirst().equals("pause") || operands.getFirst().equals("resume"))) {
            throw new ParseException("give pause or resume");
        }
        return "hook " + operands.getFirst();
    }
}
