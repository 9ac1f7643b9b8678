#!/usr/bin/env bash
# Run HERE (a build machine with JDK 25 and Maven) before sending the checkout to a GPU machine that
# has CUDA but neither Java nor Maven. Stages into .gpu/ (git-ignored):
#   .gpu/jre.tar.xz   a jlinked Java 25 runtime (made once, by ../shared/tools/gpu-jre.sh)
#   .gpu/lib/         the module jars and their runtime dependencies, the benchmarks' jar among them (the vgpu
#                     launcher's class path: it offers bench, remote-bench and migration-bench from that jar)
#   .gpu/jdk/include/ the JDK's jni.h and jni_md.h, for building vgpu's libcuda.so.1 on the GPU machine
#   .gpu/test/        the rcuda-runtime modules', migration-agent, idle-gpu-tracker, job-wrapper modules', benchmarks and
#                     integration tests' test classes (a directory:
#                     the jlinked runtime has no zip file system, which JUnit needs to scan a jar) and the JUnit
#                     console launcher
# Then carry .gpu to the GPU machine and run testbed/gpu/run-on-gpu.sh there from the repository root.
set -euo pipefail

top=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
cd "$top"
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
junit_version=1.13.4
junit_jar=$HOME/.m2/repository/org/junit/platform/junit-platform-console-standalone/$junit_version/junit-platform-console-standalone-$junit_version.jar

# One reactor run: package builds the module jars and the test-jars (tests are compiled, not run);
# copy-dependencies then resolves the rcuda-runtime modules from this reactor rather than a repository.
rm -rf .gpu/lib .gpu/test
mkdir -p .gpu/lib .gpu/test
mvn -q -B -DskipTests package dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$top/.gpu/lib"
cp job-wrapper/vgpu-launcher/target/vgpu-launcher-*.jar testbed/benchmarks/target/vgpu-benchmarks.jar .gpu/lib/
# jni.h and jni_md.h of the JDK that builds vgpu: the GPU machine has no JDK, and vgpu's libcuda.so.1 is built
# there (its in-process serving includes them; no JVM is linked)
rm -rf .gpu/jdk && mkdir -p .gpu/jdk/include/linux
cp "$JAVA_HOME/include/jni.h" .gpu/jdk/include/ && cp "$JAVA_HOME/include/linux/jni_md.h" .gpu/jdk/include/linux/
# copy-dependencies took the rcuda-runtime modules' main jars for the launcher; the tests go beside JUnit
# (the call-surface processor's tests compile sources of the checkout, so they stay here).
mkdir -p .gpu/test/classes
for module in rcuda-runtime/vgpu-*/; do
    if [ "$module" != rcuda-runtime/vgpu-call-surface-processor/ ] && [ -d "$module/target/test-classes" ]; then
        cp -r "$module/target/test-classes/." .gpu/test/classes/
    fi
done
cp -r migration-agent/target/test-classes/. .gpu/test/classes/
cp -r idle-gpu-tracker/target/test-classes/. .gpu/test/classes/
for module in vgpu-jcuda-interposer vgpu-job vgpu-api vgpu-launcher; do
    cp -r "job-wrapper/$module/target/test-classes/." .gpu/test/classes/
done
cp -r testbed/vgpu-integration-tests/target/test-classes/. .gpu/test/classes/
cp -r testbed/benchmarks/target/test-classes/. .gpu/test/classes/

if [ ! -f "$junit_jar" ]; then
    mvn -q -B dependency:get -Dartifact=org.junit.platform:junit-platform-console-standalone:$junit_version
fi
cp "$junit_jar" .gpu/test/

# The runtime carries jdk.jfr, so a worker or bench on the GPU machine can be profiled with
# JAVA_TOOL_OPTIONS=-XX:StartFlightRecording=filename=$OUT/%p.jfr (README.md, "GPU machines").
# A runtime packed before it did is packed again.
# It carries java.instrument too: vgpu run -- puts vgpu's interposer into a program's JVM (jcuda-programs.sh).
if [ ! -f .gpu/jre.tar.xz ] || [ ! -f .gpu/jre.modules ] || ! grep -qx jdk.jfr .gpu/jre.modules \
    || ! grep -qx java.instrument .gpu/jre.modules; then
    JRE_MODULES=java.base,java.logging,jdk.unsupported,java.management,java.naming,jdk.crypto.ec,java.xml,jdk.management,java.sql,jdk.jfr,java.instrument \
        "${VGPU_GPU_JRE_TOOL:-$top/../shared/tools/gpu-jre.sh}"
    tar xJf .gpu/jre.tar.xz -O jre/release | sed -n 's/^MODULES="\(.*\)"$/\1/p' | tr ' ' '\n' > .gpu/jre.modules
fi

# VGPU_GPU_OLD_COMMIT=<commit>: also stages two builds side by side for testbed/gpu/round-trip-bisect.sh, each its
# shaded vgpu.jar and benchmarks jar with a COMMIT file: .gpu/bisect/old (that commit, built in a throwaway worktree)
# and .gpu/bisect/new (this checkout, built above).
rm -rf .gpu/bisect
if [ -n "${VGPU_GPU_OLD_COMMIT:-}" ]; then
    old_commit=$(git rev-parse --short "$VGPU_GPU_OLD_COMMIT^{commit}")
    old_tree=$(mktemp -d)/vgpu-$old_commit
    git worktree add --detach "$old_tree" "$old_commit" >/dev/null
    # only the launcher's shaded jar and the benchmarks (the launcher's -am builds them); the old commit's static
    # checks are no business of this run
    (cd "$old_tree" && mvn -q -B -DskipTests -Dspotbugs.skip=true package -pl job-wrapper/vgpu-launcher -am)
    mkdir -p .gpu/bisect/old .gpu/bisect/new
    cp "$old_tree/job-wrapper/target/vgpu.jar" "$old_tree/testbed/benchmarks/target/vgpu-benchmarks.jar" .gpu/bisect/old/
    echo "$old_commit" > .gpu/bisect/old/COMMIT
    git worktree remove --force "$old_tree"
    cp job-wrapper/target/vgpu.jar testbed/benchmarks/target/vgpu-benchmarks.jar .gpu/bisect/new/
    git rev-parse --short HEAD > .gpu/bisect/new/COMMIT
    if ! git diff --quiet HEAD; then
        sed -i 's/$/+uncommitted/' .gpu/bisect/new/COMMIT
    fi
fi

echo "prepare: staged for the GPU machine:"
du -sh .gpu/jre.tar.xz .gpu/lib .gpu/test
if [ -d .gpu/bisect ]; then
    echo "  .gpu/bisect: old $(cat .gpu/bisect/old/COMMIT), new $(cat .gpu/bisect/new/COMMIT)"
fi
