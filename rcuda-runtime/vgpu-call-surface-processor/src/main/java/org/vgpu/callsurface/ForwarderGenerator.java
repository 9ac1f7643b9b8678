package org.vgpu.callsurface;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import javax.annotation.processing.ProcessingEnvironment;
import javax.lang.model.element.AnnotationMirror;
import javax.lang.model.element.Element;
import javax.lang.model.element.ElementKind;
import javax.lang.model.element.ExecutableElement;
import javax.lang.model.element.Modifier;
import javax.lang.model.element.TypeElement;
import javax.lang.model.element.VariableElement;
import javax.lang.model.type.DeclaredType;
import javax.lang.model.type.TypeKind;
import javax.lang.model.util.ElementFilter;
import javax.tools.Diagnostic;

/**
 * Writes forwarders of an interface: a plain one ({@code @GenerateForwarder} on the interface: an
 * abstract class passing every call to a {@code delegate}), and gated ones ({@code @GatedForwarder}
 * on a hand-written class: an abstract superclass implementing every call the class does not
 * write itself).
 *
 * <p>A gated call is straight-line code, as it would be written by hand:
 * <pre>
 *   Token slot = enter();
 *   try {
 *       beforeSynchronizing();          // only for calls annotated @Synchronizing
 *       return current().call(a, translate(b));
 *   } finally {
 *       exit(slot);
 *   }
 * </pre>
 * with no lambda or other object per call: the hooks are methods of the hand-written class that
 * its annotations name ({@code @GatedForwarder.Enter}, {@code .Exit}, {@code .Current},
 * {@code .BeforeSynchronizing}, {@code .Translate} for an argument type), declared abstract in the
 * generated superclass; the hand-written class being final, each is a monomorphic call the JIT inlines.
 * A {@code @ReplayedSetting} call also hands, after the call returned, a record of its arguments
 * (a nested {@code Setting} of the generated class, which can make the call again on a migration's
 * target) to the {@code .Record} hook: one object per such call, which only sets a value. A setting
 * of a handle's value ({@code funcSetAttribute}) holds the app's handle, names it among its
 * {@code handles()}, and is made again on a target with the target's handle ({@code onTarget}).
 */
final class ForwarderGenerator {
    static final String GENERATE_FORWARDER = "org.vgpu.runtime.api.surface.GenerateForwarder";
    static final String GATED_FORWARDER = "org.vgpu.runtime.api.surface.GatedForwarder";
    static final String SYNCHRONIZING = "org.vgpu.runtime.api.surface.Synchronizing";
    static final String REPLAYED_SETTING = "org.vgpu.runtime.api.surface.ReplayedSetting";
    /** What javac calls parameters of a class compiled without -parameters. */
    private static final Pattern SYNTHETIC_NAME = Pattern.compile("arg\\d+");

    private final ProcessingEnvironment env;

    ForwarderGenerator(ProcessingEnvironment env) {
        this.env = env;
    }

    // ---- the plain forwarder

    void generatePlain(TypeElement contract) {
        AnnotationMirror mirror = Mirrors.find(contract, GENERATE_FORWARDER).orElseThrow();
        String name = (String) Mirrors.value(env.getElementUtils(), mirror, "value");
        String pkg =
                env.getElementUtils().getPackageOf(contract).getQualifiedName().toString();
        SourceWriter out = new SourceWriter(pkg);
        String iface = out.type(contract.getQualifiedName().toString());
        out.line("/**");
        out.line(" * A {@link " + iface + "} that passes every call to another one, for decorators that change a few");
        out.line(" * calls: override those, and call {@code super} or {@link #delegate} for the rest.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("public abstract class " + name + " implements " + iface + " {");
        out.line("    protected final " + iface + " delegate;");
        out.blank();
        out.line("    protected " + name + "(" + iface + " delegate) {");
        out.line("        this.delegate = delegate;");
        out.line("    }");
        for (ExecutableElement call : calls(contract)) {
            out.blank();
            out.line("    @Override");
            out.line("    " + signature(out, call) + " {");
            String arguments = call.getParameters().stream()
                    .map(p -> p.getSimpleName().toString())
                    .collect(Collectors.joining(", "));
            String result = returns(call) ? "return " : "";
            out.line("        " + result + "delegate." + call.getSimpleName() + "(" + arguments + ");");
            out.line("    }");
        }
        out.line("}");
        Sources.write(
                env,
                contract,
                pkg + "." + name,
                out.toSource(contract.getQualifiedName().toString()));
    }

    // ---- the gated forwarder

    private record Hooks(
            ExecutableElement enter,
            ExecutableElement exit,
            ExecutableElement current,
            ExecutableElement beforeSynchronizing,
            ExecutableElement record,
            Map<String, ExecutableElement> translations) {}

    void generateGated(TypeElement handWritten) {
        AnnotationMirror mirror = Mirrors.find(handWritten, GATED_FORWARDER).orElseThrow();
        TypeElement contract =
                (TypeElement) ((DeclaredType) Mirrors.value(env.getElementUtils(), mirror, "value")).asElement();
        Optional<Hooks> found = hooks(handWritten);
        if (found.isEmpty()) {
            return;
        }
        Hooks hooks = found.get();
        String pkg = env.getElementUtils()
                .getPackageOf(handWritten)
                .getQualifiedName()
                .toString();
        String name = "Gated" + contract.getSimpleName();
        SourceWriter out = new SourceWriter(pkg);
        String iface = out.type(contract.getQualifiedName().toString());
        out.line("/**");
        out.line(" * The calls of {@link " + iface + "} that {@link " + handWritten.getSimpleName()
                + "} passes through its gate unchanged, written out");
        out.line(
                " * one by one, without a lambda per call, from the hooks it names; it writes the other calls itself.");
        out.line(" */");
        out.generatedAnnotation();
        out.line("abstract class " + name + " implements " + iface + " {");
        for (ExecutableElement hook : hookList(hooks)) {
            out.blank();
            out.line("    /** See {@link " + handWritten.getSimpleName() + "#" + hook.getSimpleName() + "}. */");
            // The record hook takes this class's own Setting, which javac cannot resolve before it exists.
            String parameters = hook == hooks.record
                    ? "Setting " + hook.getParameters().getFirst().getSimpleName()
                    : hook.getParameters().stream()
                            .map(p -> out.type(p.asType()) + " " + p.getSimpleName())
                            .collect(Collectors.joining(", "));
            out.line("    abstract " + out.type(hook.getReturnType()) + " " + hook.getSimpleName() + "(" + parameters
                    + ");");
        }
        boolean tokened = hooks.enter.getReturnType().getKind() != TypeKind.VOID;
        List<ExecutableElement> settings = new ArrayList<>();
        for (ExecutableElement call : calls(contract)) {
            if (declares(handWritten, call)) {
                continue;
            }
            boolean setting = Mirrors.has(call, REPLAYED_SETTING);
            if (setting && checkSetting(handWritten, call, hooks)) {
                settings.add(call);
            }
            if (call.getParameters().stream().anyMatch(p -> p.getSimpleName().contentEquals("slot"))) {
                error(call, "a parameter named 'slot' would hide the gate's token");
            }
            out.blank();
            out.line("    @Override");
            out.line("    " + signature(out, call) + " {");
            String token = tokened ? out.type(hooks.enter.getReturnType()) + " slot = " : "";
            out.line("        " + token + hooks.enter.getSimpleName() + "();");
            out.line("        try {");
            if (Mirrors.has(call, SYNCHRONIZING)) {
                if (hooks.beforeSynchronizing == null) {
                    error(
                            handWritten,
                            call.getSimpleName()
                                    + " is @Synchronizing: name a @GatedForwarder.BeforeSynchronizing hook");
                } else {
                    out.line("            " + hooks.beforeSynchronizing.getSimpleName() + "();");
                }
            }
            String arguments =
                    call.getParameters().stream().map(p -> argument(p, hooks)).collect(Collectors.joining(", "));
            String invocation = hooks.current.getSimpleName() + "()." + call.getSimpleName() + "(" + arguments + ");";
            if (!setting || hooks.record == null) {
                out.line("            " + (returns(call) ? "return " : "") + invocation);
            } else {
                String record = "new " + settingName(call) + "(" + parameterNames(call) + ")";
                if (returns(call)) {
                    out.line("            " + out.type(call.getReturnType()) + " result = " + invocation);
                    out.line("            " + hooks.record.getSimpleName() + "(" + record + ");");
                    out.line("            return result;");
                } else {
                    out.line("            " + invocation);
                    out.line("            " + hooks.record.getSimpleName() + "(" + record + ");");
                }
            }
            out.line("        } finally {");
            out.line("            " + hooks.exit.getSimpleName() + "(" + (tokened ? "slot" : "") + ");");
            out.line("        }");
            out.line("    }");
        }
        if (hooks.record != null) {
            writeSettings(out, iface, settings, hooks);
        }
        out.line("}");
        Sources.write(
                env,
                handWritten,
                pkg + "." + name,
                out.toSource(handWritten.getQualifiedName().toString()));
    }

    private Optional<Hooks> hooks(TypeElement handWritten) {
        ExecutableElement enter = null;
        ExecutableElement exit = null;
        ExecutableElement current = null;
        ExecutableElement beforeSynchronizing = null;
        ExecutableElement record = null;
        Map<String, ExecutableElement> translations = new TreeMap<>();
        for (ExecutableElement method : ElementFilter.methodsIn(handWritten.getEnclosedElements())) {
            if (Mirrors.has(method, GATED_FORWARDER + ".Enter")) {
                enter = method;
            } else if (Mirrors.has(method, GATED_FORWARDER + ".Exit")) {
                exit = method;
            } else if (Mirrors.has(method, GATED_FORWARDER + ".Current")) {
                current = method;
            } else if (Mirrors.has(method, GATED_FORWARDER + ".BeforeSynchronizing")) {
                beforeSynchronizing = method;
            } else if (Mirrors.has(method, GATED_FORWARDER + ".Record")) {
                if (method.getParameters().size() != 1 || method.getReturnType().getKind() != TypeKind.VOID) {
                    error(method, "a @Record hook takes the Setting and returns nothing");
                    continue;
                }
                record = method;
            } else if (Mirrors.has(method, GATED_FORWARDER + ".Translate")) {
                if (method.getParameters().size() != 1
                        || !env.getTypeUtils()
                                .isSameType(
                                        method.getReturnType(),
                                        method.getParameters().getFirst().asType())) {
                    error(method, "a @Translate hook takes one argument and returns the same type");
                    continue;
                }
                translations.put(method.getReturnType().toString(), method);
            } else {
                continue;
            }
            if (method.getModifiers().contains(Modifier.PRIVATE)
                    || method.getModifiers().contains(Modifier.STATIC)) {
                error(
                        method,
                        "a hook is an instance method the generated superclass can call: not private, not static");
            }
        }
        if (enter == null || exit == null || current == null) {
            error(handWritten, "a @GatedForwarder names its @Enter, @Exit and @Current hooks");
            return Optional.empty();
        }
        return Optional.of(new Hooks(enter, exit, current, beforeSynchronizing, record, translations));
    }

    private static List<ExecutableElement> hookList(Hooks hooks) {
        List<ExecutableElement> list = new ArrayList<>(List.of(hooks.enter, hooks.exit, hooks.current));
        if (hooks.beforeSynchronizing != null) {
            list.add(hooks.beforeSynchronizing);
        }
        if (hooks.record != null) {
            list.add(hooks.record);
        }
        list.addAll(hooks.translations.values());
        return list;
    }

    private static String argument(VariableElement parameter, Hooks hooks) {
        ExecutableElement translation =
                hooks.translations.get(parameter.asType().toString());
        String name = parameter.getSimpleName().toString();
        return translation == null ? name : translation.getSimpleName() + "(" + name + ")";
    }

    // ---- replayed settings

    /** Whether {@code call} can be recorded as a setting: a Record hook and a value it sets. */
    private boolean checkSetting(TypeElement handWritten, ExecutableElement call, Hooks hooks) {
        if (hooks.record == null) {
            error(handWritten, call.getSimpleName() + " is @ReplayedSetting: name a @GatedForwarder.Record hook");
            return false;
        }
        if (call.getParameters().stream().allMatch(parameter -> isHandle(parameter, hooks))) {
            error(call, "a @ReplayedSetting call's first value parameter is what it sets: it has none");
            return false;
        }
        for (VariableElement parameter : call.getParameters()) {
            if (parameter.getSimpleName().contentEquals("result")) {
                error(parameter, "a parameter named 'result' would hide the call's result");
                return false;
            }
        }
        return true;
    }

    private static boolean isHandle(VariableElement parameter, Hooks hooks) {
        return hooks.translations.containsKey(parameter.asType().toString());
    }

    /**
     * The Setting type and one record per setting call: its arguments, its key (the call, the
     * handles it names and its first other argument: a later call of the same key replaces it), the
     * handles it names, itself with the target's handles for those, and the call made again on a
     * target. {@code TargetHandles} gives a target's handle for each of the app's, with the names of
     * the {@code @Translate} hooks.
     */
    private static void writeSettings(SourceWriter out, String iface, List<ExecutableElement> settings, Hooks hooks) {
        String list = out.type("java.util.List");
        out.blank();
        out.line("    /** What a setting call set, kept for a migration to set again on its target. */");
        out.line("    interface Setting {");
        out.line("        /**");
        out.line(
                "         * A later setting of an equal key replaces this one: the call, the handles it names and its first");
        out.line("         * other argument.");
        out.line("         */");
        out.line("        Object key();");
        out.blank();
        out.line(
                "        /** The app's handles it names, which the target must have before it is set there; it goes with them. */");
        out.line("        " + list + "<Object> handles();");
        out.blank();
        out.line("        /** This setting with the target's handles in place of the app's. */");
        out.line("        Setting onTarget(TargetHandles target);");
        out.blank();
        out.line("        /** Makes the call again on {@code target}, with the handles it holds. */");
        out.line("        void replayOn(" + iface + " target);");
        out.line("    }");
        out.blank();
        out.line("    /** A migration target's handle for each of the app's, once the target has made it. */");
        out.line("    interface TargetHandles {");
        hooks.translations
                .values()
                .forEach(hook -> out.line("        " + out.type(hook.getReturnType()) + " " + hook.getSimpleName() + "("
                        + out.type(hook.getParameters().getFirst().asType()) + " "
                        + hook.getParameters().getFirst().getSimpleName() + ");"));
        out.line("    }");
        for (ExecutableElement call : settings) {
            String components = call.getParameters().stream()
                    .map(p -> out.type(p.asType()) + " " + p.getSimpleName())
                    .collect(Collectors.joining(", "));
            List<String> handles = call.getParameters().stream()
                    .filter(p -> isHandle(p, hooks))
                    .map(p -> p.getSimpleName().toString())
                    .toList();
            String set = call.getParameters().stream()
                    .filter(p -> !isHandle(p, hooks))
                    .findFirst()
                    .orElseThrow()
                    .getSimpleName()
                    .toString();
            String name = settingName(call);
            List<String> key = new ArrayList<>(List.of(name + ".class"));
            key.addAll(handles);
            key.add(set);
            String translated = call.getParameters().stream()
                    .map(p -> isHandle(p, hooks)
                            ? "target."
                                    + hooks.translations
                                            .get(p.asType().toString())
                                            .getSimpleName() + "(" + p.getSimpleName() + ")"
                            : p.getSimpleName().toString())
                    .collect(Collectors.joining(", "));
            out.blank();
            out.line("    /** The arguments of {@link " + iface + "#" + call.getSimpleName() + "}. */");
            out.line("    record " + name + "(" + components + ") implements Setting {");
            out.line("        @Override");
            out.line("        public Object key() {");
            out.line("            return " + list + ".of(" + String.join(", ", key) + ");");
            out.line("        }");
            out.blank();
            out.line("        @Override");
            out.line("        public " + list + "<Object> handles() {");
            out.line("            return " + list + ".of(" + String.join(", ", handles) + ");");
            out.line("        }");
            out.blank();
            out.line("        @Override");
            out.line("        public Setting onTarget(TargetHandles target) {");
            out.line("            return " + (handles.isEmpty() ? "this" : "new " + name + "(" + translated + ")")
                    + ";");
            out.line("        }");
            out.blank();
            out.line("        @Override");
            out.line("        public void replayOn(" + iface + " target) {");
            out.line("            target." + call.getSimpleName() + "(" + parameterNames(call) + ");");
            out.line("        }");
            out.line("    }");
        }
    }

    /** ctxSetLimit -> CtxSetLimitSetting. */
    private static String settingName(ExecutableElement call) {
        String name = call.getSimpleName().toString();
        return Character.toUpperCase(name.charAt(0)) + name.substring(1) + "Setting";
    }

    private static String parameterNames(ExecutableElement call) {
        return call.getParameters().stream()
                .map(p -> p.getSimpleName().toString())
                .collect(Collectors.joining(", "));
    }

    // ---- shared

    /** The interface's abstract methods, its own and inherited, in declaration order. */
    private List<ExecutableElement> calls(TypeElement contract) {
        List<ExecutableElement> calls = new ArrayList<>();
        for (ExecutableElement method :
                ElementFilter.methodsIn(env.getElementUtils().getAllMembers(contract))) {
            if (method.getModifiers().contains(Modifier.ABSTRACT)
                    && method.getEnclosingElement().getKind() == ElementKind.INTERFACE) {
                for (VariableElement parameter : method.getParameters()) {
                    if (SYNTHETIC_NAME.matcher(parameter.getSimpleName()).matches()) {
                        error(
                                contract,
                                contract.getSimpleName() + "." + method.getSimpleName()
                                        + " has no parameter names: compile its module with -parameters");
                        break;
                    }
                }
                calls.add(method);
            }
        }
        return calls;
    }

    /**
     * Whether the hand-written class writes {@code call} itself. Compared by name and erased
     * parameter types, not by {@code Elements.overrides}: while this runs, the class's superclass
     * is the one being generated, so javac does not yet see it implement the interface.
     */
    private boolean declares(TypeElement handWritten, ExecutableElement call) {
        for (ExecutableElement method : ElementFilter.methodsIn(handWritten.getEnclosedElements())) {
            if (method.getSimpleName().equals(call.getSimpleName()) && sameParameters(method, call)) {
                return true;
            }
        }
        return false;
    }

    private boolean sameParameters(ExecutableElement a, ExecutableElement b) {
        if (a.getParameters().size() != b.getParameters().size()) {
            return false;
        }
        for (int i = 0; i < a.getParameters().size(); i++) {
            if (!env.getTypeUtils()
                    .isSameType(
                            env.getTypeUtils().erasure(a.getParameters().get(i).asType()),
                            env.getTypeUtils().erasure(b.getParameters().get(i).asType()))) {
                return false;
            }
        }
        return true;
    }

    private static boolean returns(ExecutableElement call) {
        return call.getReturnType().getKind() != TypeKind.VOID;
    }

    private static String signature(SourceWriter out, ExecutableElement call) {
        String parameters = call.getParameters().stream()
                .map(p -> out.type(p.asType()) + " " + p.getSimpleName())
                .collect(Collectors.joining(", "));
        String thrown = call.getThrownTypes().isEmpty()
                ? ""
                : " throws " + call.getThrownTypes().stream().map(out::type).collect(Collectors.joining(", "));
        return "public " + out.type(call.getReturnType()) + " " + call.getSimpleName() + "(" + parameters + ")"
                + thrown;
    }

    private void error(Element element, String message) {
        env.getMessager().printMessage(Diagnostic.Kind.ERROR, message, element);
    }
}
