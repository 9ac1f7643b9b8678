package org.vgpu.callsurface;

import javax.annotation.processing.ProcessingEnvironment;
import javax.lang.model.element.Element;
import javax.tools.Diagnostic;

/**
 * The mistakes found in one call surface: each is reported to javac at the element it concerns, and
 * any one of them keeps the generator from writing the surface's classes.
 */
final class SurfaceDiagnostics {
    private final ProcessingEnvironment env;
    private boolean failed;

    SurfaceDiagnostics(ProcessingEnvironment env) {
        this.env = env;
    }

    void error(Element element, String message) {
        failed = true;
        env.getMessager().printMessage(Diagnostic.Kind.ERROR, message, element);
    }

    boolean failed() {
        return failed;
    }
}
