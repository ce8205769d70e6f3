#!/usr/bin/env bash
#
# generate.sh — sample-data generation speed and memory on a scaled example.
#
#   bench/generate.sh [MODEL] [SCALE...]
#
#   bench/generate.sh                                                  # order-response at scales 0.001 and 0.01
#   bench/generate.sh examples/leaderboard/model.json 0.001 0.005
#
# For each scale runs `keyplan generate MODEL --scale SCALE --seed 1` under
# /usr/bin/time -v into bench/out/generate-<model>-<scale>/ (removed afterwards unless
# KP_KEEP=1) and prints records, MiB written, wall and CPU seconds, records per second
# (wall and CPU) and the peak resident set size. Peak RSS should stay flat as the
# scale grows: the generator holds 8 bytes per parent record of each fan-out
# relation and per record carrying a derived aggregate, never the data it writes.
# KP_BENCH_OUT puts the files elsewhere (e.g. /dev/shm, to time the generator rather
# than the disk). Needs a built keyplan (scripts/build.sh); KP_BUILD names another
# build directory.
set -euo pipefail
root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
model=${1:-$root/examples/order-response/model.json}
shift || true
scales=("$@")
[[ ${#scales[@]} -gt 0 ]] || scales=(0.001 0.01)
keyplan=$root/${KP_BUILD:-build}/keyplan
[[ -x $keyplan ]] || { echo "generate.sh: $keyplan is missing; run scripts/build.sh first" >&2; exit 2; }
[[ -f $model ]] || { echo "generate.sh: no model at $model" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "generate.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

name=$(basename "$(dirname "$model")")
printf '%-24s %8s %12s %9s %8s %8s %12s %12s %10s\n' model scale records MiB wall_s cpu_s rec/s_wall rec/s_cpu peak_MiB
for scale in "${scales[@]}"; do
    out=${KP_BENCH_OUT:-$root/bench/out}/generate-$name-$scale
    rm -rf "$out"
    log=$(mktemp)
    /usr/bin/time -v "$keyplan" generate "$model" --scale "$scale" --seed 1 --out "$out" >"$log" 2>&1 || {
        cat "$log" >&2
        rm -f "$log"
        exit 1
    }
    records=$(cat "$out"/*.ndjson | wc -l)
    bytes=$(cat "$out"/*.ndjson | wc -c)
    python3 - "$log" "$name" "$scale" "$records" "$bytes" <<'PY'
import re, sys
log, name, scale, records, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
text = open(log).read()
def field(label):
    return re.search(re.escape(label) + r":\s*(\S+)", text).group(1)
user, system = float(field("User time (seconds)")), float(field("System time (seconds)"))
parts = [float(p) for p in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")]
wall = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
rss = int(field("Maximum resident set size (kbytes)")) / 1024
cpu = user + system
print(f"{name:<24} {scale:>8} {records:>12,} {size / 2**20:>9.1f} {wall:>8.2f} {cpu:>8.2f} "
      f"{records / max(wall, 1e-9):>12,.0f} {records / max(cpu, 1e-9):>12,.0f} {rss:>10.1f}")
PY
    rm -f "$log"
    [[ ${KP_KEEP:-0} == 1 ]] || rm -rf "$out"
done
