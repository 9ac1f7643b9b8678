package org.vgpu.job.jcuda;

import java.io.IOException;
import java.io.InputStream;
import java.lang.classfile.ClassFile;
import java.lang.classfile.Opcode;
import java.lang.classfile.instruction.InvokeInstruction;
import java.util.List;

/** Defines a class the interposer rewrote, beside the test's class path, where its original stays as it was. */
final class RewrittenClassLoader extends ClassLoader {
    RewrittenClassLoader(ClassLoader parent) {
        super(parent);
    }

    Class<?> define(String internalName, byte[] classfile) {
        return defineClass(internalName.replace('/', '.'), classfile, 0, classfile.length);
    }

    /** The classes {@code classfile} calls static methods of, by internal name. */
    static List<String> staticCallOwners(byte[] classfile) {
        return ClassFile.of().parse(classfile).methods().stream()
                .flatMap(method -> method.code().stream())
                .flatMap(code -> code.elementStream())
                .filter(element -> element instanceof InvokeInstruction call && call.opcode() == Opcode.INVOKESTATIC)
                .map(element -> ((InvokeInstruction) element).owner().asInternalName())
                .distinct()
                .toList();
    }

    /** The original bytes of a class on the test's class path. */
    static byte[] classBytes(String internalName) throws IOException {
        try (InputStream in =
                RewrittenClassLoader.class.getClassLoader().getResourceAsStream(internalName + ".class")) {
            return in.readAllBytes();
        }
    }
}
