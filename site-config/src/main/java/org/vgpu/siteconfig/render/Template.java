package org.vgpu.siteconfig.render;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A text file shipped as a resource with {@code {{name}}} placeholders. Rendering insists that every
 * placeholder gets a value and every value is used, so a renamed placeholder fails the tests
 * instead of shipping a literal {@code {{...}}} into an admin's slurm.conf.
 */
final class Template {
    private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{([a-z_]+)}}");

    private final String name;
    private final String text;

    private Template(String name, String text) {
        this.name = name;
        this.text = text;
    }

    static Template load(String resource) {
        try (InputStream in = Template.class.getResourceAsStream("templates/" + resource)) {
            if (in == null) {
                throw new IllegalStateException("template " + resource + " is missing from the class path");
            }
            return new Template(resource, new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IllegalStateException("template " + resource + " cannot be read", e);
        }
    }

    String render(Map<String, String> values) {
        Set<String> unused = new HashSet<>(values.keySet());
        Matcher matcher = PLACEHOLDER.matcher(text);
        StringBuilder rendered = new StringBuilder();
        while (matcher.find()) {
            String value = values.get(matcher.group(1));
            if (value == null) {
                throw new IllegalStateException(
                        "template " + name + " has {{" + matcher.group(1) + "}} but no value for it");
            }
            unused.remove(matcher.group(1));
            matcher.appendReplacement(rendered, Matcher.quoteReplacement(value));
        }
        if (!unused.isEmpty()) {
            throw new IllegalStateException("template " + name + " lacks placeholders for " + unused);
        }
        return matcher.appendTail(rendered).toString();
    }
}
