package org.vgpu.siteconfig;

import java.util.List;
import java.util.stream.Collectors;

import org.vgpu.common.error.VgpuFailure;

/** A site configuration file with problems; carries every problem found, not just the first. */
public final class SiteConfigException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    private final transient List<ConfigProblem> problems;

    public SiteConfigException(List<ConfigProblem> problems) {
        super("CONFIG_INVALID", describe(problems), null);
        if (problems.isEmpty()) {
            throw new IllegalArgumentException("a SiteConfigException needs at least one problem");
        }
        this.problems = List.copyOf(problems);
    }

    public List<ConfigProblem> problems() {
        return problems;
    }

    private static String describe(List<ConfigProblem> problems) {
        return problems.size() + " problem" + (problems.size() == 1 ? "" : "s") + " in the site configuration:\n"
                + problems.stream().map(ConfigProblem::toString).collect(Collectors.joining("\n"));
    }
}
