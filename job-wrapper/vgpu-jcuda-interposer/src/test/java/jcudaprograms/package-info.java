/**
 * JCuda programs written the way JCuda programs are written, with nothing of vgpu in them: {@code JCudaShimsTest}
 * rewrites their call sites, the integration tests' {@code JCudaProgramsTest} runs each unmodified through {@code vgpu
 * run --} on the CPU emulation (their kernels, {@code jcudaprograms/*.cu}, and the kernels' Java twins, {@code
 * org.vgpu.job.jcuda.ProgramTwins}, are the integration tests' too), and {@code testbed/gpu/jcuda-programs.sh} runs them on a GPU with plain JCuda
 * and through vgpu. Each takes the directory of its kernels' PTX (the NVRTC program ignores it) and, optionally, how
 * often to repeat its computation (the GPU script repeats them so that a migration lands while they run), and prints
 * what it computed, as a hash of the result's bits, so that two runs can be compared line by line.
 */
package jcudaprograms;
