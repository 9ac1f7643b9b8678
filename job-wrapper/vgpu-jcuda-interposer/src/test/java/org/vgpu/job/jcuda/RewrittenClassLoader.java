package org.vgpu.job.jcuda;

import java.io.IOException;
import java.io.InputStream;

/** Defines a class the interposer rewrote, beside the test's class path, where its original stays as it was. */
final class RewrittenClassLoader extends ClassLoader {
    RewrittenClassLoader(ClassLoader parent) {
        super(parent);
    }

    Class<?> define(String internalName, byte[] classfile) {
        return defineClass(internalName.replace('/', '.'), classfile, 0, classfile.length);
    }

    /** The original bytes of a class on the test's class path. */
    static byte[] classBytes(String internalName) throws IOException {
        try (InputStream in =
                RewrittenClassLoader.class.getClassLoader().getResourceAsStream(internalName + ".class")) {
            return in.readAllBytes();
        }
    }
}
