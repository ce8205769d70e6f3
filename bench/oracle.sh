#!/usr/bin/env bash
#
# oracle.sh — oracle evaluations per second on a scaled example.
#
#   bench/oracle.sh [MODEL] [SCALE] [REQUESTS]
#
#   bench/oracle.sh                                          # saas-control-plane, scale 0.01, 500 requests
#   bench/oracle.sh examples/saas-control-plane/model.json 0.2 5000
#
# Generates the example's data once (bench/out/oracle-<model>-<scale>/, reused when
# present), then runs `keyplan expect --sample SEED --repeat REQUESTS` for every access
# pattern: parameters are drawn from the data as verify draws them (with the pattern's
# skew) and the oracle evaluates each request. Prints one line per pattern with
# evaluations per second (parameter drawing included) and the data load time.
# Needs a built keyplan (scripts/build.sh); KP_BUILD names another build directory.
set -euo pipefail
root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
model=${1:-$root/examples/saas-control-plane/model.json}
scale=${2:-0.01}
requests=${3:-500}
keyplan=$root/${KP_BUILD:-build}/keyplan
[[ -x $keyplan ]] || { echo "oracle.sh: $keyplan is missing; run scripts/build.sh first" >&2; exit 2; }
[[ -f $model ]] || { echo "oracle.sh: no model at $model" >&2; exit 2; }

name=$(basename "$(dirname "$model")")
data=$root/bench/out/oracle-$name-$scale
if [[ ! -d $data ]]; then
    "$keyplan" generate "$model" --scale "$scale" --out "$data" --seed 1 --quiet
fi
records=$(cat "$data"/*.ndjson | wc -l)
echo "oracle benchmark: $name, scale $scale ($records records), $requests requests per pattern"

patterns=$("$keyplan" check "$model" --scale "$scale" --format json |
    python3 -c 'import json,sys; [print(p["name"]) for p in json.load(sys.stdin)["access_patterns"]]')
start=$(date +%s.%N)
"$keyplan" expect "$model" --scale "$scale" --data "$data" --pattern "$(head -n1 <<<"$patterns")" --sample 1 >/dev/null 2>&1
load=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$start" "$(date +%s.%N)")
echo "load + one evaluation: ${load} s"
while read -r pattern; do
    "$keyplan" expect "$model" --scale "$scale" --data "$data" --pattern "$pattern" --sample 1 \
        --repeat "$requests" 2>&1 >/dev/null | grep 'evaluations in' || echo "$pattern: failed"
done <<<"$patterns"
