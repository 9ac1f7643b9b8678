package org.vgpu.callsurface;

import java.util.Map;
import java.util.Optional;
import javax.lang.model.element.AnnotationMirror;
import javax.lang.model.element.AnnotationValue;
import javax.lang.model.element.Element;
import javax.lang.model.element.ExecutableElement;
import javax.lang.model.element.TypeElement;
import javax.lang.model.util.Elements;

/**
 * Reads annotations by their qualified names: the processor depends on nothing but the JDK, so it
 * never loads the annotation classes of the project it runs on.
 */
final class Mirrors {
    private Mirrors() {}

    static Optional<AnnotationMirror> find(Element element, String annotation) {
        for (AnnotationMirror mirror : element.getAnnotationMirrors()) {
            TypeElement type = (TypeElement) mirror.getAnnotationType().asElement();
            if (type.getQualifiedName().contentEquals(annotation)) {
                return Optional.of(mirror);
            }
        }
        return Optional.empty();
    }

    static boolean has(Element element, String annotation) {
        return find(element, annotation).isPresent();
    }

    /** The value of {@code attribute}, its default where the annotation leaves it out. */
    static Object value(Elements elements, AnnotationMirror mirror, String attribute) {
        for (Map.Entry<? extends ExecutableElement, ? extends AnnotationValue> entry :
                elements.getElementValuesWithDefaults(mirror).entrySet()) {
            if (entry.getKey().getSimpleName().contentEquals(attribute)) {
                return entry.getValue().getValue();
            }
        }
        throw new IllegalArgumentException(mirror + " has no attribute " + attribute);
    }
}
