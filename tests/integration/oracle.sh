#!/usr/bin/env bash
#
# oracle.sh BUILD_DIR — the oracle fixture (tests/fixtures/oracle: 35 hand-written records
# meant to reach every corner the oracle knows — an N:M held as an array, a 1:1, cascades and
# detaches, listings without a declared order, two-hop paths) seeded on each real local
# server and verified whole: `verify --exhaustive --writes` must pass every pattern, every
# write (its claimed items met, its undo exact) and every container. Small enough to cost a
# few seconds per database; found two wrong plans and a wrong write claim when first run.
# Verify's draws (the write operations' parameters) are fixed seeds, KP_ORACLE_SEEDS
# (default "1 2 3 93053591"; the last drew a restock of a product whose tags are far from
# the model's average, which Cassandra's claims once priced at the average: they now count
# each operation's own elements). The write claims (items and write requests) are held to
# what each operation sent.
# Prints one line per check and "N passed, N failed".
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-oracle.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

model=$root/tests/fixtures/oracle/model.json data=$root/tests/fixtures/oracle/data prefix=kpit_oracle$$_
for pair in dynamodb:dynalite mongodb:ferretdb cassandra:cassandra; do
    db=${pair%%:*} t=${pair#*:}
    if ! "$root/scripts/target-$t.sh" install >/dev/null 2>&1 || ! "$root/scripts/target-$t.sh" start >/dev/null 2>&1; then
        bad "$db: $t did not start"
        continue
    fi
    url=$("$root/scripts/target-$t.sh" url)
    args=(--db "$db" --target "$db=$url" --prefix "$prefix")
    if "$keyplan" seed "$model" "${args[@]}" --data "$data" --force --quiet >"$work/$db-seed.out" 2>&1; then
        ok "$db: seeded"
    else
        bad "$db: seed exited $?"; cat "$work/$db-seed.out"; continue
    fi
    for seed in ${KP_ORACLE_SEEDS:-1 2 3 93053591}; do
    "$keyplan" verify "$model" "${args[@]}" --data "$data" --exhaustive --writes --seed "$seed" --format json >"$work/$db.json" 2>"$work/$db.err"
    status=$?
    summary=$(python3 - "$work/$db.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["databases"][0]
pats, writes, conts = r.get("patterns", []), r.get("writes", []), r.get("containers", [])
bad = [x["name"] for x in pats + writes + conts if x.get("result") != "pass"]
if not r.get("coverage", {}).get("exhaustive") or not r.get("undo", {}).get("done"):
    bad.append("coverage-or-undo")
print(len(pats), len(writes), " ".join(bad) or "-")
PY
)
    read -r npat nwrite failing <<<"$summary"
    if [[ $status -eq 0 && $failing == - && ${npat:-0} -gt 0 && ${nwrite:-0} -gt 0 ]]; then
        ok "$db: verify --exhaustive --writes --seed $seed: $npat patterns and $nwrite writes pass, every container as the data predicts"
    else
        bad "$db: verify --seed $seed exited $status; not passed: ${failing:-?}"; head -c 3000 "$work/$db.err"
    fi
    done
    "$keyplan" teardown "$model" "${args[@]}" >/dev/null 2>&1 || bad "$db: teardown"
done
echo "oracle: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
