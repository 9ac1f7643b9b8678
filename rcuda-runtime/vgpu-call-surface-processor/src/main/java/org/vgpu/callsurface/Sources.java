package org.vgpu.callsurface;

import java.io.IOException;
import java.io.Writer;
import javax.annotation.processing.ProcessingEnvironment;
import javax.lang.model.element.Element;
import javax.tools.Diagnostic;

/** Hands generated files to javac. */
final class Sources {
    private Sources() {}

    static void write(ProcessingEnvironment env, Element origin, String qualifiedName, String source) {
        try (Writer writer =
                env.getFiler().createSourceFile(qualifiedName, origin).openWriter()) {
            writer.write(source);
        } catch (IOException e) {
            env.getMessager()
                    .printMessage(
                            Diagnostic.Kind.ERROR, "cannot write " + qualifiedName + ": " + e.getMessage(), origin);
        }
    }
}
