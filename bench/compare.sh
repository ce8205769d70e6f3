#!/usr/bin/env bash
#
# compare.sh — time and peak memory of `keyplan advise --db all` and `keyplan compare`
# on generated models of 100, 1,000 and 10,000 entities (5 access patterns each), and
# of the hot-partition simulation over generated data, timed separately.
#
#   bench/compare.sh [--keyplan PATH] [--sizes "100 1000"] [--db LIST] [--mem-limit-mb N]
#                    [--repeat N] [--instructions] [--rich]
#
# Prints one line per measurement: "command entities db cpu_seconds peak_kb status", the
# CPU time (user + system) being the minimum over --repeat runs (default 3: the machine
# is shared, the minimum is the least disturbed run) and the peak resident memory the
# largest. --instructions adds the instruction count of one run under callgrind (exact,
# independent of load; slow: about a minute per 10,000-entity command). --rich generates the
# realistic shape (gen_compare_model.py --rich: N:M and 1:1 relations, multi-hop responses,
# updates, deletes and multi-step writes, copies, derived attributes, two mixes).
# Each run is capped (ulimit -v, default 4096 MB; timeout 300 s) so a runaway model
# cannot take the machine down; a capped run is reported, not hidden.
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/.." && pwd)
keyplan=$root/build/keyplan
sizes="100 1000 10000"
dbs="all"
mem_mb=4096
repeat=3
instructions=0
rich=
while [[ $# -gt 0 ]]; do
    case $1 in
    --keyplan) keyplan=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --db) dbs=$2; shift 2 ;;
    --mem-limit-mb) mem_mb=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --instructions) instructions=1; shift ;;
    --rich) rich=--rich; shift ;;
    *) echo "compare.sh: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
[[ -x $keyplan ]] || { echo "compare.sh: no keyplan at $keyplan; build it (scripts/build.sh) or pass --keyplan" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "compare.sh: needs /usr/bin/time (Debian package 'time')" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/keyplan-bench-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

measure() { # label entities db -- command...
    local label=$1 n=$2 db=$3; shift 4
    local best="" peak=0 status=ok rc
    for ((r = 0; r < repeat; r++)); do
        out=$( (ulimit -v $((mem_mb * 1024)); timeout 300 /usr/bin/time -f "%U %S %M" "$@" >/dev/null 2>"$work/err") 2>&1; echo "rc=$?")
        rc=${out##*rc=}
        read -r user sys kb < <(tail -n 1 "$work/err")
        [[ $rc == 0 ]] || status="failed(rc=$rc)"
        [[ $rc == 124 ]] && status="timeout(300s)"
        cpu=$(awk -v u="${user:-0}" -v s="${sys:-0}" 'BEGIN { printf "%.3f", u + s }')
        if [[ -z $best ]] || awk -v a="$cpu" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$cpu; fi
        [[ ${kb:-0} -gt $peak ]] && peak=${kb:-0}
        [[ $status == ok ]] || break
    done
    local ins=""
    if [[ $instructions == 1 && $status == ok ]] && command -v valgrind >/dev/null; then
        valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" >/dev/null 2>"$work/cg.err"
        ins=$(sed -n 's/.*I *refs: *//p' "$work/cg.err" | tr -d ,)
        ins=" ${ins:-?} instructions"
    fi
    printf '%-18s %6s %-18s %8s s %10s KB  %s%s\n' "$label" "$n" "$db" "${best:-?}" "$peak" "$status" "$ins"
}

echo "keyplan: $keyplan ($("$keyplan" --version 2>/dev/null))"
for n in $sizes; do
    model=$work/model-$n.json
    python3 "$here/gen_compare_model.py" "$n" $rich >"$model"
    for db in ${dbs//,/ }; do
        measure "advise" "$n" "$db" -- "$keyplan" advise "$model" --db "$db" --format json
        measure "compare" "$n" "$db" -- "$keyplan" compare "$model" --db "$db" --format json
        measure "compare --single" "$n" "$db" -- "$keyplan" compare "$model" --db "$db" --single --format json
    done
done
# the hot-partition simulation over generated data, on the SaaS example
example=$root/examples/saas-control-plane/model.json
"$keyplan" generate "$example" --scale 0.01 --out "$work/saas" --seed 1 >/dev/null 2>&1
measure "compare (no data)" "saas" "dynamodb" -- "$keyplan" compare "$example" --scale 0.01 --db dynamodb --format json
measure "compare --data" "saas" "dynamodb" -- "$keyplan" compare "$example" --scale 0.01 --db dynamodb --data "$work/saas" --format json
