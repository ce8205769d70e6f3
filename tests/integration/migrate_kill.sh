#!/usr/bin/env bash
#
# migrate_kill.sh BUILD_DIR — kill -9 of `keyplan migrate` at a random moment, then the same
# command again: it must resume and finish with nothing lost or duplicated. Per run: a
# version pair drawn at random (examples/*/versions/*), its OLD data seeded, migrate started
# throttled (--rate) and killed with SIGKILL after a random delay (the step it was in is read
# from its progress file), rerun to the end; then `keyplan verify NEW --exhaustive` must pass
# and an independent client must read back exactly NEW's items (migrate_lib.sh).
#
#   KP_MIGRATE_KILL_RUNS   runs per database (default 10: the full loop; CI runs 2)
#   KP_TEST_SEED           replays a loop (printed at the start)
#   KP_MIGRATE_DBS         the databases (default: all three)
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=$build/keyplan
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
runs=${KP_MIGRATE_KILL_RUNS:-10}
# under CI a fixed seed (the subset is the same every time); otherwise a fresh one
if [[ ${CI:-} == true && -z ${KP_TEST_SEED:-} ]]; then seed=20261204; else seed=${KP_TEST_SEED:-$(( (RANDOM << 15) | RANDOM ))}; fi
RANDOM=$seed
echo "migrate_kill: $runs runs per database, random seed $seed (KP_TEST_SEED=$seed replays it)"

work=$(mktemp -d "${TMPDIR:-/tmp}/kp-migrate-kill.XXXXXX")
[[ ${KP_MIGRATE_KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
# shellcheck source=tests/integration/migrate_lib.sh
source "$here/migrate_lib.sh"
need_driver || { echo "FAIL: cassandra-driver could not be installed from PyPI"; echo "0 passed, 1 failed"; exit 1; }

pairs=()
for dir in "$root"/examples/*/versions/*/; do
    [[ -f $dir/old.json && -f $dir/new.json ]] && pairs+=("$dir")
done

for db in ${KP_MIGRATE_DBS:-dynamodb mongodb cassandra}; do
    "$root/scripts/targets.sh" install "$db" >/dev/null && "$root/scripts/targets.sh" start "$db" >/dev/null ||
        { bad "$db: the server could not be installed or started"; continue; }
    url=$("$root/scripts/targets.sh" url "$db" | awk '{print $2}')
    # the writes are throttled so that a run lasts a few seconds and the kill can fall in any step
    rate=600
    for run in $(seq 1 "$runs"); do
        dir=${pairs[$((RANDOM % ${#pairs[@]}))]}
        pair=$(basename "$dir")
        old=$dir/old.json new=$dir/new.json
        scale=$(pair_scale "$old") name=$(model_name "$old")
        prefix=mk$$x$run data=$work/$pair-data state=$work/state-$db-$run mine=$work/state-$db-$run/$db
        [[ -d $data ]] || "$keyplan" generate "$old" --scale "$scale" --seed 11 --out "$data" --quiet ||
            { bad "$db run $run: generate"; continue; }
        common=(--db "$db" --target "$db=$url" --prefix "$prefix" --scale "$scale")
        "$keyplan" seed "$old" "${common[@]}" --data "$data" --quiet >"$work/seed.log" 2>&1 ||
            { bad "$db run $run ($pair): seed OLD"; tail -5 "$work/seed.log"; continue; }
        # the kill falls anywhere in the run: a dry run says how many items it writes and
        # deletes, so the window is its expected length at --rate (plus the read and schema steps)
        n=$("$keyplan" migrate "$old" "$new" "${common[@]}" --state "$work/dry-$db-$run" --dry-run --format json --quiet 2>/dev/null |
            python3 -c 'import json,sys; r=json.load(sys.stdin)["databases"][0]; print(r["items_written"]+r["items_deleted"])' 2>/dev/null || echo 1000)
        window=$(( 600 + n * 1000 / rate ))
        delay=$(( (RANDOM * 32768 + RANDOM) % window ))
        "$keyplan" migrate "$old" "$new" "${common[@]}" --state "$state" --rate "$rate" --quiet >"$work/m1.log" 2>&1 &
        pid=$!
        sleep "$(( delay / 1000 )).$(printf '%03d' $(( delay % 1000 )))"
        kill -9 "$pid" 2>/dev/null && killed=yes || killed="no (it had finished)"
        wait "$pid" 2>/dev/null
        step=$(python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["phase"])
except Exception: print("before its first step was recorded")' "$mine/progress.json")
        if "$keyplan" migrate "$old" "$new" "${common[@]}" --state "$state" --quiet >"$work/m2.log" 2>&1; then
            ok "$db run $run ($pair): killed after ${delay} ms: $killed, in step '$step'; the rerun finished ($(grep -oE 'items written [0-9]+, unchanged [0-9]+, deleted [0-9]+|already at the new model' "$work/m2.log"))"
        else
            bad "$db run $run ($pair): the rerun after kill -9 (after ${delay} ms, step '$step') failed"; cat "$work/m2.log"; continue
        fi
        prove_new "$db run $run ($pair)" || continue
        "$keyplan" teardown "$new" --db "$db" --target "$db=$url" --prefix "$prefix" --scale "$scale" --force >/dev/null 2>&1 ||
            bad "$db run $run: teardown"
    done
done

echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
