package org.vgpu.siteconfig.render;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;

class TemplateTest {
    private static Map<String, String> plugstackValues() {
        return Map.of(
                "cluster",
                "c",
                "source",
                "/etc/vgpu/vgpu.conf",
                "bridge_line",
                "required /x.so tracker=h:1 fallback=none");
    }

    @Test
    void valuesReplaceTheirPlaceholdersLiterally() {
        String text = Template.load("plugstack.conf.tmpl")
                .render(Map.of(
                        "cluster",
                        "c$1",
                        "source",
                        "/a\\b",
                        "bridge_line",
                        "required /x.so tracker=h:1 fallback=none"));

        assertTrue(text.contains("required /x.so tracker=h:1 fallback=none"), text);
        assertTrue(text.contains("cluster c$1, rendered from /a\\b"), text);
    }

    @Test
    void aPlaceholderWithoutValueIsABug() {
        Map<String, String> values = new HashMap<>(plugstackValues());
        values.remove("bridge_line");

        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> Template.load("plugstack.conf.tmpl").render(values));
        assertEquals("template plugstack.conf.tmpl has {{bridge_line}} but no value for it", e.getMessage());
    }

    @Test
    void aValueWithoutPlaceholderIsABug() {
        Map<String, String> values = new HashMap<>(plugstackValues());
        values.put("lend_qos", "q");

        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> Template.load("plugstack.conf.tmpl").render(values));
        assertEquals("template plugstack.conf.tmpl lacks placeholders for [lend_qos]", e.getMessage());
    }

    @Test
    void aMissingTemplateIsNamed() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Template.load("slurmdbd.conf.tmpl"));
        assertEquals("template slurmdbd.conf.tmpl is missing from the class path", e.getMessage());
    }
}
