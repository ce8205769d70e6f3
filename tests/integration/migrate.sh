#!/usr/bin/env bash
#
# migrate.sh BUILD_DIR — `keyplan migrate` against the real servers: every model-version
# pair under examples/*/versions/ on every database. For each: the OLD data is generated
# and seeded, `keyplan migrate OLD NEW` runs, then
#   - the snapshot migrate read from the target equals the data seeding wrote (nothing
#     lost or changed on the way in),
#   - `keyplan verify NEW --exhaustive` passes with the data migrate wrote (every pattern,
#     every anchor, every container read back with the items and checksums NEW predicts),
#   - an independent client reads the target back: DynamoDB with a Python Scan and
#     MongoDB with a libmongoc dump, item for item against what `keyplan seed NEW
#     --dry-run --export-items` expects; Cassandra rows counted per table with
#     cassandra-driver against the same export,
#   - a second migrate run does nothing (already at NEW).
# KP_MIGRATE_PAIRS narrows the pairs (folder names), KP_MIGRATE_DBS the databases. The kill
# -9 loop is scripts/migrate-kill.sh (CI runs a fixed-seed subset of it: KP_MIGRATE_KILL_RUNS).
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=$build/keyplan
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

work=$(mktemp -d "${TMPDIR:-/tmp}/kp-migrate.XXXXXX")
[[ ${KP_MIGRATE_KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
# shellcheck source=tests/integration/migrate_lib.sh
source "$here/migrate_lib.sh"
need_driver || { echo "FAIL: cassandra-driver could not be installed from PyPI"; echo "0 passed, 1 failed"; exit 1; }


pairs=()
for dir in "$root"/examples/*/versions/*/; do
    [[ -f $dir/old.json && -f $dir/new.json ]] || continue
    name=$(basename "$dir")
    [[ -z ${KP_MIGRATE_PAIRS:-} || " $KP_MIGRATE_PAIRS " == *" $name "* ]] && pairs+=("$dir")
done
[[ ${#pairs[@]} -ge 6 ]] || [[ -n ${KP_MIGRATE_PAIRS:-} ]] || bad "at least six version pairs under examples/*/versions (found ${#pairs[@]})"

for db in ${KP_MIGRATE_DBS:-dynamodb mongodb cassandra}; do
    "$root/scripts/targets.sh" install "$db" >/dev/null && "$root/scripts/targets.sh" start "$db" >/dev/null ||
        { bad "$db: the server could not be installed or started"; continue; }
    url=$("$root/scripts/targets.sh" url "$db" | awk '{print $2}')
    n=0
    for dir in "${pairs[@]}"; do
        n=$((n + 1))
        pair=$(basename "$dir")
        old=$dir/old.json new=$dir/new.json
        scale=$(pair_scale "$old")
        prefix=mg$$x$n
        name=$(model_name "$old")
        data=$work/$pair-data state=$work/$pair-state mine=$work/$pair-state/$db
        [[ -d $data ]] || "$keyplan" generate "$old" --scale "$scale" --seed 11 --out "$data" --quiet ||
            { bad "$db $pair: generate"; continue; }
        common=(--db "$db" --target "$db=$url" --prefix "$prefix" --scale "$scale")
        if ! "$keyplan" seed "$old" "${common[@]}" --data "$data" --quiet >"$work/seed.log" 2>&1; then
            bad "$db $pair: seed OLD"; tail -5 "$work/seed.log"; continue
        fi
        if "$keyplan" migrate "$old" "$new" "${common[@]}" --state "$state" --quiet >"$work/migrate.log" 2>&1; then
            ok "$db $pair: migrate ($(grep -oE 'items written [0-9]+, unchanged [0-9]+, deleted [0-9]+' "$work/migrate.log"))"
        else
            bad "$db $pair: migrate"; cat "$work/migrate.log"; continue
        fi
        if out=$(same_records "$data" "$mine/old"); then
            ok "$db $pair: the records migrate read from the target are the records seeded"
        else
            bad "$db $pair: the snapshot differs from the seeded data: $out"
        fi
        prove_new "$db $pair" || continue
        if "$keyplan" migrate "$old" "$new" "${common[@]}" --state "$state" --quiet 2>&1 | grep "already at the new model" >/dev/null; then
            ok "$db $pair: a second migrate finds the target at NEW and does nothing"
        else
            bad "$db $pair: a second migrate did not recognise the finished migration"
        fi
        "$keyplan" teardown "$new" --db "$db" --target "$db=$url" --prefix "$prefix" --scale "$scale" --force >/dev/null 2>&1 ||
            bad "$db $pair: teardown after the migration"
    done
done

echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
