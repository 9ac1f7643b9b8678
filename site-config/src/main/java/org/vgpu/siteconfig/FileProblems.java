package org.vgpu.siteconfig;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The problems found in one configuration file, each at its line, collected so that the file is rejected with all of
 * them at once.
 */
final class FileProblems {
    /** How many names or pairs a message lists before it says how many more there are. */
    static final int SHOWN_AT_MOST = 10;

    private final Path file;
    private final List<ConfigProblem> problems = new ArrayList<>();

    FileProblems(Path file) {
        this.file = file;
    }

    void add(int line, String message) {
        problems.add(new ConfigProblem(file, line, message));
    }

    /** The list itself, for a reader that adds to it. */
    List<ConfigProblem> list() {
        return problems;
    }

    /** The entry's value, or empty when {@code parser} refuses it (which is reported at the entry's line). */
    <T> Optional<T> parse(IniFile.Entry entry, Function<String, T> parser) {
        try {
            return Optional.of(parser.apply(entry.value()));
        } catch (IllegalArgumentException e) {
            add(entry.line(), entry.key() + ": " + e.getMessage());
            return Optional.empty();
        }
    }

    /** The problems already reported on these entries; a table with bad lines is not also called incomplete. */
    List<ConfigProblem> at(List<IniFile.Entry> entries) {
        Set<Integer> lines = entries.stream().map(IniFile.Entry::line).collect(Collectors.toSet());
        return problems.stream()
                .filter(problem -> lines.contains(problem.line()))
                .toList();
    }

    /** Rejects the file with every problem, in line order, if there is one. */
    void throwIfAny() {
        if (!problems.isEmpty()) {
            problems.sort(Comparator.comparingInt(ConfigProblem::line));
            throw new SiteConfigException(problems);
        }
    }

    /** Names for a message: all of a small site's, the first few of a large one's. */
    static String listed(List<String> names) {
        return names.size() <= SHOWN_AT_MOST
                ? String.join(", ", names)
                : String.join(", ", names.subList(0, SHOWN_AT_MOST)) + " and " + (names.size() - SHOWN_AT_MOST)
                        + " more";
    }
}
