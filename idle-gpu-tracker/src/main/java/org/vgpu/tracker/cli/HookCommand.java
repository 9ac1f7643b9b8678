package org.vgpu.tracker.cli;

import static org.vgpu.common.contract.BridgeContract.HOOK_PAUSE;
import static org.vgpu.common.contract.BridgeContract.HOOK_RESUME;

import java.util.List;

import org.apache.commons.cli.ParseException;

import org.vgpu.common.line.TrackerAdminClient;

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
        return HOOK_PAUSE + "|" + HOOK_RESUME;
    }

    @Override
    String request(List<String> operands) throws ParseException {
        if (operands.size() != 1
                || !(operands.getFirst().equals(HOOK_PAUSE)
                        || operands.getFirst().equals(HOOK_RESUME))) {
            throw new ParseException("give " + HOOK_PAUSE + " or " + HOOK_RESUME);
        }
        return TrackerAdminClient.hookRequest(operands.getFirst().equals(HOOK_PAUSE));
    }
}
