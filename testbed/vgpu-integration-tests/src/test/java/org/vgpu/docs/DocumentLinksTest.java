package org.vgpu.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * Every relative link of the repository's Markdown documents leads somewhere: the file or folder exists and, when the
 * link names a section ({@code file.md#section}), the file has a heading of that anchor, as GitHub derives anchors
 * from headings. Links to the web and links inside code spans and blocks are not checked.
 */
class DocumentLinksTest {
    private static final Path ROOT = Path.of("..", "..").toAbsolutePath().normalize();
    private static final Set<String> NOT_DOCUMENTS = Set.of(".git", "target", "build", "node_modules", ".gpu");
    private static final Pattern LINK = Pattern.compile("\\[[^\\]]*\\]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern CODE_SPAN = Pattern.compile("`[^`]*`");

    @Test
    void everyRelativeLinkOfEveryDocumentResolves() throws IOException {
        List<Path> documents = documents();
        assertTrue(documents.contains(ROOT.resolve("README.md")), "found no README.md under " + ROOT);
        List<String> broken = new ArrayList<>();
        Map<Path, Set<String>> anchors = new HashMap<>();
        for (Path document : documents) {
            for (String target : links(document)) {
                String problem = problem(document, target, anchors);
                if (problem != null) {
                    broken.add(ROOT.relativize(document) + ": (" + target + ") " + problem);
                }
            }
        }
        assertEquals(List.of(), broken, "links that lead nowhere");
    }

    @Test
    void anchorsAreMadeAsGitHubMakesThem() {
        assertEquals("environment-of-the-jobs-tasks", anchor("Environment of the job's tasks"));
        assertEquals("the-job-side-vgpu-run", anchor("The job side: `vgpu run`"));
        assertEquals("mpj-express-ranks-vgpu-run---ranks-n", anchor("MPJ Express ranks: `vgpu run --ranks N`"));
    }

    private static String problem(Path document, String target, Map<Path, Set<String>> anchors) {
        if (target.matches("^[a-z][a-z0-9+.-]*:.*")) {
            return null; // http:, https:, mailto: and the like
        }
        int hash = target.indexOf('#');
        String file = hash < 0 ? target : target.substring(0, hash);
        String section = hash < 0 ? null : target.substring(hash + 1);
        Path resolved =
                file.isEmpty() ? document : document.getParent().resolve(file).normalize();
        if (!resolved.startsWith(ROOT) || !Files.exists(resolved)) {
            return "no such file";
        }
        if (section == null || section.isEmpty()) {
            return null;
        }
        if (!resolved.toString().endsWith(".md")) {
            return "a section of a file that is not Markdown";
        }
        Set<String> known = anchors.computeIfAbsent(resolved, DocumentLinksTest::anchorsOf);
        return known.contains(section) ? null : "no heading with anchor #" + section;
    }

    private static List<Path> documents() throws IOException {
        try (Stream<Path> files = Files.walk(ROOT)) {
            return files.filter(path -> path.toString().endsWith(".md"))
                    .filter(path -> ROOT.relativize(path).toString().isEmpty() || !containsAny(ROOT.relativize(path)))
                    .sorted()
                    .toList();
        }
    }

    private static boolean containsAny(Path relative) {
        for (Path part : relative) {
            if (NOT_DOCUMENTS.contains(part.toString())) {
                return true;
            }
        }
        return false;
    }

    /** The link targets of a document, outside fenced code blocks and code spans. */
    private static List<String> links(Path document) {
        List<String> targets = new ArrayList<>();
        boolean inFence = false;
        for (String line : lines(document)) {
            if (line.strip().startsWith("```")) {
                inFence = !inFence;
                continue;
            }
            if (inFence) {
                continue;
            }
            Matcher link = LINK.matcher(CODE_SPAN.matcher(line).replaceAll(""));
            while (link.find()) {
                targets.add(link.group(1));
            }
        }
        return targets;
    }

    private static Set<String> anchorsOf(Path document) {
        Set<String> anchors = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        boolean inFence = false;
        for (String line : lines(document)) {
            if (line.strip().startsWith("```")) {
                inFence = !inFence;
                continue;
            }
            Matcher heading = HEADING.matcher(line);
            if (inFence || !heading.matches()) {
                continue;
            }
            String anchor = anchor(heading.group(1));
            int count = seen.merge(anchor, 1, Integer::sum);
            anchors.add(count == 1 ? anchor : anchor + "-" + (count - 1));
        }
        return anchors;
    }

    /** GitHub's anchor of a heading: lower case, punctuation but hyphens and underscores dropped, spaces hyphens. */
    static String anchor(String heading) {
        String lower = heading.toLowerCase(Locale.ROOT);
        StringBuilder anchor = new StringBuilder();
        lower.codePoints().forEach(c -> {
            if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
                anchor.appendCodePoint(c);
            } else if (c == ' ') {
                anchor.append('-');
            }
        });
        return anchor.toString();
    }

    private static List<String> lines(Path document) {
        try {
            return Files.readAllLines(document);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
