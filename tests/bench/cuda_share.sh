#!/usr/bin/env bash
# Small messages on cuda tensors whose ranks share one GPU, side by side in
# one run: the ranks' CUDA contexts time-sliced by the GPU (the default),
# then under NVIDIA's MPS server, which runs the ranks' work in one shared
# context. The script starts the MPS control daemon with pipe and log
# directories of its own and stops it before it exits.
#
# For each collective, REPEAT runs of each side alternating:
#   distlab bench C --np NP --device cuda -b SIZE -e SIZE -n 1000 -w 100
# and prints the median time of each side and the ratio.
#
# -N runs what BUILD_DIR holds without building it (a build carried to a
# GPU machine that has no compiler for it).
#
# usage: tests/bench/cuda_share.sh [-B BUILD_DIR] [-N] [-p NP] [-s SIZE] [-r REPEAT]
#                                  [-c "COLL ..."]
# defaults: -B build -p 3 -s 1K -r 2 -c "all_reduce scatter broadcast all_gather"
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build np=3 size=1K repeat=2 make=1 colls="all_reduce scatter broadcast all_gather"
while getopts "B:Np:s:r:c:" opt; do
    case $opt in
    B) build=$OPTARG ;;
    N) make=0 ;;
    p) np=$OPTARG ;;
    s) size=$OPTARG ;;
    r) repeat=$OPTARG ;;
    c) colls=$OPTARG ;;
    *) sed -n '/^# usage/,/^# defaults/p' "$0" | sed 's/^# //' >&2; exit 2 ;;
    esac
done
[ $make = 0 ] || ninja -C "$build" cli/distlab >/dev/null
exe=$build/cli/distlab
if ! command -v nvidia-cuda-mps-control >/dev/null; then
    echo "cuda_share: nvidia-cuda-mps-control is not installed here: nothing to compare" >&2
    exit 77
fi
# (pgrep -f: the names are longer than the 15 characters pgrep matches)
if pgrep -f '^nvidia-cuda-mps-(control -d|server)' >/dev/null; then
    echo "cuda_share: an MPS server already runs on this machine: stop it first" >&2
    exit 2
fi

mps=$(mktemp -d)
export CUDA_MPS_PIPE_DIRECTORY=$mps/pipe CUDA_MPS_LOG_DIRECTORY=$mps/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
running=0
start_mps() {
    nvidia-cuda-mps-control -d
    running=1
    sleep 1
}
stop_mps() {
    [ $running = 1 ] || return 0
    echo quit | nvidia-cuda-mps-control || true
    for _ in $(seq 50); do
        pgrep -f '^nvidia-cuda-mps-control -d' >/dev/null || break
        sleep 0.1
    done
    running=0
}
trap 'stop_mps; rm -rf "$mps"' EXIT

# Collect every run's output first and parse it afterwards: on a busy
# machine a parser running beside a benchmark moves its small sizes.
raw=$mps/raw
: >"$raw"
bench() { # SIDE COLL
    local out
    out=$(timeout 120 "$exe" bench "$2" --np "$np" --device cuda -b "$size" -e "$size" \
        -n 1000 -w 100) || {
        echo "cuda_share: distlab bench $2 failed ($1):" >&2
        echo "$out" >&2
        return 1
    }
    printf '%s %s %s\n' "$1" "$2" "$(grep -v '^#' <<<"$out" | awk '{print $6}')" >>"$raw"
    [ "$1" = mps ] && grep -q "under NVIDIA's MPS server" <<<"$out" &&
        echo "mps $2 noted" >>"$raw"
    return 0
}
for ((i = 0; i < repeat; i++)); do
    for c in $colls; do bench sliced "$c"; done
    start_mps
    for c in $colls; do bench mps "$c"; done
    stop_mps
done

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
python3 - "$raw" "$np" "$size" "$repeat" "$gpu" <<'EOF'
import statistics, sys
raw, np, size, repeat, gpu = sys.argv[1:]
times, noted = {}, set()
for line in open(raw):
    side, coll, rest = (line.split(None, 2) + [""])[:3]
    if rest.strip() == "noted":
        noted.add(coll)
        continue
    times.setdefault((side, coll), []).append(float(rest))
print("cuda tensors, %s ranks sharing one %s, %s, 1000 iterations after 100 warm-up, "
      "median of %s runs" % (np, gpu, size, repeat))
print("%-12s %14s %14s %8s" % ("collective", "sliced (us)", "MPS (us)", "ratio"))
for coll in dict.fromkeys(c for _, c in times):
    a = statistics.median(times[("sliced", coll)])
    b = statistics.median(times[("mps", coll)])
    print("%-12s %14.2f %14.2f %8.2f%s" % (coll, a, b, a / b,
                                          "" if coll in noted else "  (bench did not see MPS)"))
EOF
