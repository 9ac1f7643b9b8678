package org.vgpu.siteconfig;

import java.util.List;
import java.util.stream.Collectors;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/** A site configuration file with problems; carries every problem found, not just the first. */
public final class SiteConfigException extends VgpuException {
    private static final long serialVersionUID = 1L;

    private final transient List<ConfigProblem> problems;

    public SiteConfigException(List<ConfigProblem> problems) {
        super(ErrorCode.CUDA_ERROR_INVALID_VALUE, describe(problems));
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
