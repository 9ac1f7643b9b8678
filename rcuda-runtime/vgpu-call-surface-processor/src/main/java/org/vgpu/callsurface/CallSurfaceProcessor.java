package org.vgpu.callsurface;

import java.util.Set;
import javax.annotation.processing.AbstractProcessor;
import javax.annotation.processing.RoundEnvironment;
import javax.annotation.processing.SupportedAnnotationTypes;
import javax.lang.model.SourceVersion;
import javax.lang.model.element.Element;
import javax.lang.model.element.ElementKind;
import javax.lang.model.element.TypeElement;
import javax.tools.Diagnostic;

/**
 * Generates the mechanical parts of the GPU call surface at build time, as Aeron generates its
 * codecs from an SBE schema: the remote protocol's opcode table, encoder, decoder and visitor from
 * a {@code @CallSurface} interface ({@link WireSurfaceGenerator}), both ends of the calls its API
 * marks {@code @RemoteCall} ({@link OneToOneGenerator}), and the forwarders of {@code VirtualGpu}
 * ({@link ForwarderGenerator}). What stays hand-written is behaviour.
 */
@SupportedAnnotationTypes({
    WireSurfaceGenerator.CALL_SURFACE,
    ForwarderGenerator.GENERATE_FORWARDER,
    ForwarderGenerator.GATED_FORWARDER
})
public final class CallSurfaceProcessor extends AbstractProcessor {

    @Override
    public SourceVersion getSupportedSourceVersion() {
        return SourceVersion.latestSupported();
    }

    @Override
    // the annotations are vgpu's own: no other processor is meant to see them
    @SuppressWarnings("DoNotClaimAnnotations")
    public boolean process(Set<? extends TypeElement> annotations, RoundEnvironment round) {
        for (TypeElement annotation : annotations) {
            String name = annotation.getQualifiedName().toString();
            for (Element element : round.getElementsAnnotatedWith(annotation)) {
                if (!(element instanceof TypeElement type)) {
                    continue;
                }
                switch (name) {
                    case WireSurfaceGenerator.CALL_SURFACE -> {
                        if (requireInterface(type, name)) {
                            new WireSurfaceGenerator(processingEnv).generate(type);
                        }
                    }
                    case ForwarderGenerator.GENERATE_FORWARDER -> {
                        if (requireInterface(type, name)) {
                            new ForwarderGenerator(processingEnv).generatePlain(type);
                        }
                    }
                    case ForwarderGenerator.GATED_FORWARDER ->
                        new ForwarderGenerator(processingEnv).generateGated(type);
                    default -> throw new IllegalStateException("not a supported annotation: " + name);
                }
            }
        }
        return true;
    }

    private boolean requireInterface(TypeElement type, String annotation) {
        if (type.getKind() == ElementKind.INTERFACE) {
            return true;
        }
        processingEnv
                .getMessager()
                .printMessage(Diagnostic.Kind.ERROR, "@" + annotation + " belongs on an interface", type);
        return false;
    }
}
