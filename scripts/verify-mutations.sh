#!/usr/bin/env bash
#
# verify-mutations.sh [--db LIST] [--runs N] [--seed S] [--build DIR] — the full loop of
# issue #13's proof that verify covers the data: per database, N runs (default 10) that
# each seed an example, change, delete or add ONE item / document / row with an
# independent client (boto3, pymongo, cassandra-driver from PyPI, pinned below), read it
# back with that client, and expect `keyplan verify` in its default mode to exit 1 naming
# the pattern (tests/integration/mutations.py says how each kind of change is made).
# CI runs a fixed-seed subset of it (tests/integration/mutations.sh).
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/.." && pwd)
dbs=dynamodb,mongodb,cassandra runs=10 seed=${KP_TEST_SEED:-$RANDOM} build=$root/build examples=
while (($#)); do
    case $1 in
        --db) dbs=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --build) build=$2; shift 2 ;;
        --examples) examples=$2; shift 2 ;;
        *) echo "verify-mutations.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
venv=$root/.deps/mutations-py
pins=(boto3==1.35.99 pymongo==4.10.1 cassandra-driver==3.29.2)
if ! "$venv/bin/python" -c 'import boto3, pymongo, cassandra' 2>/dev/null; then
    python3 -m venv "$venv" && "$venv/bin/pip" install -q "${pins[@]}" ||
        { echo "verify-mutations.sh: could not install ${pins[*]} from PyPI into $venv" >&2; exit 1; }
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-mutations.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "verify-mutations: $runs run(s) per database, seed $seed (--seed $seed replays them)"
status=0
IFS=, read -ra list <<<"$dbs"
for db in "${list[@]}"; do
    "$root/scripts/targets.sh" install "$db" >/dev/null && "$root/scripts/targets.sh" start "$db" >/dev/null ||
        { echo "FAIL: $db: the server could not be installed or started"; status=1; continue; }
    url=$("$root/scripts/targets.sh" url "$db" | awk '{print $2}')
    "$venv/bin/python" "$root/tests/integration/mutations.py" --db "$db" --keyplan "$build/keyplan" --url "$url" \
        --work "$work" --runs "$runs" --seed "$seed" ${examples:+--examples "$examples"} || status=1
done
exit $status
