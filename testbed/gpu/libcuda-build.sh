# What the GPU scripts that run CUDA programs under vgpu share (sourced after they set top, the repository root, and
# script_name; not run): the Java runtime ($JAVA when set, else the one in .gpu/jre.tar.xz unpacked to /tmp/jre), a
# work directory, vgpu's libcuda.so.1 and its test programs and benchmarks built here (with the wire header from the
# staged remote client's jar and the JDK's jni.h that prepare.sh stages), and the environment of a job with one local
# vGPU on GPU 0.
# shellcheck shell=bash
lib=rcuda-runtime/vgpu-libcuda
work=$(mktemp -d)
if [ -z "${JAVA:-}" ]; then
    tar xJf "$top/.gpu/jre.tar.xz" -C /tmp || { echo "$script_name: cannot unpack .gpu/jre.tar.xz" >&2; exit 2; }
    JAVA=/tmp/jre/bin/java
fi
python3 - "$work/vgpu_wire.h" <<'PY' || exit 2
import glob, sys, zipfile
jar = glob.glob('.gpu/lib/vgpu-remote-client-*.jar')[0]
open(sys.argv[1], 'wb').write(zipfile.ZipFile(jar).read('META-INF/vgpu/vgpu_wire.h'))
PY
make -s -C "$top/$lib" all programs bench JAVA_HOME="$top/.gpu/jdk" WIRE_HEADER="$work/vgpu_wire.h" >"$work/build.log" 2>&1 \
    || { cat "$work/build.log"; exit 2; }

# shellcheck disable=SC2034 # used by the scripts that source this
job_environment=(VGPU_COUNT=1 VGPU_ASSEMBLY=0=local:0 VGPU_LOCAL_GPUS=0 CUDA_VISIBLE_DEVICES=0 VGPU_REMOTE=
    VGPU_MIGRATE=auto VGPU_NODE=gpu-machine VGPU_SOURCE=local-only-fallback VGPU_AGENT_SOCKET="$work/agent.sock"
    SLURM_JOB_ID=1)
