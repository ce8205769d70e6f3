#!/usr/bin/env bash
#
# verify.sh — what verify's coverage costs: per database, the SaaS and order-response
# examples at the integration tests' scales, seeded once, then `keyplan verify` in its
# default mode (every anchor up to 2,000 per pattern, every page, every container read
# back) and with --exhaustive, both with verify's default 4 samples in flight, and the
# default mode once more with --in-flight 1 (one request at a time: "serial"). Prints one
# line per run: database, example, mode, anchors
# checked of all, requests, wall seconds, requests per second, client CPU seconds (user +
# system of keyplan alone) and the CPU share of the wall time.
#
#   bench/verify.sh [--keyplan PATH] [--db LIST] [--examples LIST]
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/.." && pwd)
keyplan=$root/build/keyplan dbs=dynamodb,mongodb,cassandra examples=saas-control-plane,order-response
while (($#)); do
    case $1 in
        --keyplan) keyplan=$2; shift 2 ;;
        --db) dbs=$2; shift 2 ;;
        --examples) examples=$2; shift 2 ;;
        *) echo "verify.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-bench-verify.XXXXXX")
trap 'rm -rf "$work"' EXIT
declare -A scale_ddb=([saas-control-plane]=0.004 [order-response]=0.00002 [ecommerce-single-table]=0.0002
                      [leaderboard]=0.00001 [auction-mixes]=0.0002)
declare -A scale_mongo=([saas-control-plane]=0.002 [order-response]=0.00001 [ecommerce-single-table]=0.0001
                        [leaderboard]=0.000005 [auction-mixes]=0.0001)
printf '%-10s %-24s %-11s %15s %9s %8s %9s %8s %5s\n' db example mode anchors requests wall_s req_per_s cpu_s cpu%
IFS=, read -ra dblist <<<"$dbs"
IFS=, read -ra exlist <<<"$examples"
for db in "${dblist[@]}"; do
    "$root/scripts/targets.sh" start "$db" >/dev/null 2>&1 || { echo "$db: the server did not start" >&2; continue; }
    url=$("$root/scripts/targets.sh" url "$db" | awk '{print $2}')
    for name in "${exlist[@]}"; do
        scale=${scale_ddb[$name]}
        [[ $db == mongodb ]] && scale=${scale_mongo[$name]}
        model=$root/examples/$name/model.json data=$work/$name-$scale prefix=bv$$_
        [[ -d $data ]] || "$keyplan" generate "$model" --out "$data" --scale "$scale" --seed 7 >/dev/null 2>&1
        target=(--db "$db" --target "$db=$url" --prefix "$prefix")
        "$keyplan" seed "$model" --data "$data" --scale "$scale" "${target[@]}" --force --quiet >/dev/null 2>&1 ||
            { echo "$db $name: seed failed" >&2; continue; }
        for mode in serial default exhaustive; do
            extra=()
            [[ $mode == exhaustive ]] && extra=(--exhaustive)
            [[ $mode == serial ]] && extra=(--in-flight 1)
            /usr/bin/time -f '%e %U %S' -o "$work/time" "$keyplan" verify "$model" --data "$data" --scale "$scale" \
                "${target[@]}" --seed 1 --format json "${extra[@]}" >"$work/v.json" 2>/dev/null
            read -r wall user sys <"$work/time"
            python3 - "$work/v.json" "$db" "$name" "$mode" "$wall" "$user" "$sys" <<'PY'
import json, sys
path, db, name, mode, wall, user, sys_ = sys.argv[1:]
d = json.load(open(path))["databases"][0]
req = d["totals"]["requests"]
cov = d.get("coverage") or {}
wall, cpu = float(wall), float(user) + float(sys_)
anchors = f"{cov.get('anchors')}/{cov.get('anchors_total')}"
print(f"{db:10} {name:24} {mode:11} {anchors:>15} {req:9.0f} {wall:8.1f} {req / wall if wall else 0:9.0f} {cpu:8.1f} "
      f"{100 * cpu / wall if wall else 0:4.0f}%{'' if d['passed'] else '  (FAILED)'}")
PY
        done
        "$keyplan" teardown "$model" "${target[@]}" >/dev/null 2>&1
    done
done
