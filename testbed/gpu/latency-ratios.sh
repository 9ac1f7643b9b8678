# Sourced by the GPU scripts that run latency_bench (rcuda-runtime/vgpu-libcuda/tests/programs) plainly and through
# vgpu: latency_ratios PLAIN VGPU prints, for each figure latency_bench prints, its median over the files PLAIN.*
# and over VGPU.* (one run each) and the ratio vgpu/plain.
latency_ratios() {
    local plain=$1 vgpu=$2 key p v
    for key in $(awk '{print $1}' "$(ls "$plain".* | head -n 1)"); do
        p=$(cat "$plain".* | awk -v k="$key" '$1 == k {print $2}' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
        v=$(cat "$vgpu".* | awk -v k="$key" '$1 == k {print $2}' | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
        echo "$key plain $p vgpu $v ratio $(awk -v a="$v" -v b="$p" 'BEGIN {printf "%.3f", a / b}')"
    done
}
