#!/usr/bin/env bash
# distlab's nccl backend against a bare ncclAllReduce loop, side by side.
#
# Builds distlab and tests/bench/nccl_bare.c (meson builds it when NCCL is
# found), then runs, alternating, REPEAT times each:
#   distlab bench all_reduce --np N --backend nccl -b SIZE -e SIZE --op OP
#   nccl_bare -b SIZE -o OP -g N        (ncclCommInitAll over N GPUs)
# with the same iterations and warm-up (distlab bench's defaults, 20 and 5),
# float32, in place. Prints the median time per call of each side and the
# ratio distlab / bare: distlab's time over the bare loop's, so 1.03 is 3%
# of overhead. The bare loop gives two times: queued back to back and timed
# with CUDA events (nccl-tests' way), and each call waited for before the
# next (as distlab's synchronous all_reduce is).
#
# -N runs what BUILD_DIR holds without building it (a copy of a build
# carried to a GPU machine that has no compiler for it).
#
# usage: tests/bench/nccl_overhead.sh [-B BUILD_DIR] [-N] [-b SIZE] [-o OP] [-g N]
#                                    [-n ITERS] [-w WARMUP] [-r REPEAT]
# defaults: -B build -b 1G -o sum -g 1 -n 20 -w 5 -r 5
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build size=1G op=sum np=1 iters=20 warmup=5 repeat=5 make=1
while getopts "B:Nb:o:g:n:w:r:" opt; do
    case $opt in
    B) build=$OPTARG ;;
    N) make=0 ;;
    b) size=$OPTARG ;;
    o) op=$OPTARG ;;
    g) np=$OPTARG ;;
    n) iters=$OPTARG ;;
    w) warmup=$OPTARG ;;
    r) repeat=$OPTARG ;;
    *) sed -n '/^# usage/,/^# defaults/p' "$0" | sed 's/^# //' >&2; exit 2 ;;
    esac
done

[ $make = 0 ] || ninja -C "$build" cli/distlab tests/bench/nccl_bare >/dev/null || {
    echo "nccl_overhead: cannot build $build/tests/bench/nccl_bare (is NCCL found? see" \
         "meson_options.txt: nccl, cudadir)" >&2
    exit 1
}
distlab=$build/cli/distlab
bare=$build/tests/bench/nccl_bare

median() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

d_times=() e_times=() s_times=()
for ((i = 0; i < repeat; i++)); do
    json=$("$distlab" bench all_reduce --np "$np" --backend nccl --device cuda -b "$size" \
        -e "$size" --dtype float32 --op "$op" -n "$iters" -w "$warmup" --json)
    row=$(python3 -c 'import json, sys; r = json.load(sys.stdin)["rows"][0]
print(r["size"], r["time_us"], r["wrong"])' <<<"$json")
    read -r bytes d_us wrong <<<"$row"
    [ "$wrong" = 0 ] || { echo "nccl_overhead: distlab bench found $wrong wrong elements" >&2; exit 1; }
    out=$("$bare" -b "$size" -o "$op" -g "$np" -n "$iters" -w "$warmup")
    header=$(grep '^# nccl_bare' <<<"$out")
    read -r _ e_us s_us _ < <(grep -v '^#' <<<"$out")
    d_times+=("$d_us") e_times+=("$e_us") s_times+=("$s_us")
    printf 'run %d: distlab %10.2f us   bare (events) %10.2f us   bare (synced) %10.2f us\n' \
        $((i + 1)) "$d_us" "$e_us" "$s_us"
done

d=$(printf '%s\n' "${d_times[@]}" | median)
e=$(printf '%s\n' "${e_times[@]}" | median)
s=$(printf '%s\n' "${s_times[@]}" | median)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
echo "${header#\# }"
echo "all_reduce float32 $op in place, np=$np, $bytes bytes, $iters iterations after $warmup" \
     "warm-up, median of $repeat runs${gpu:+, $gpu}"
awk -v d="$d" -v e="$e" -v s="$s" -v b="$bytes" 'BEGIN {
    printf "%-40s %12s %12s\n", "", "time (us)", "algbw (GB/s)"
    printf "%-40s %12.2f %12.2f\n", "distlab bench --backend nccl", d, b / d / 1e3
    printf "%-40s %12.2f %12.2f\n", "bare ncclAllReduce, CUDA events", e, b / e / 1e3
    printf "%-40s %12.2f %12.2f\n", "bare ncclAllReduce, each call waited", s, b / s / 1e3
    printf "ratio distlab / bare (events): %.4f (overhead %+.2f%%)\n", d / e, (d / e - 1) * 100
    printf "ratio distlab / bare (waited): %.4f (overhead %+.2f%%)\n", d / s, (d / s - 1) * 100
}'
