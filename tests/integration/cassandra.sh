#!/usr/bin/env bash
#
# cassandra.sh — keyplan against a real Apache Cassandra 5.0 node (scripts/target-cassandra.sh,
# 127.0.0.1:19042): for every example model, generate -> seed -> an independent row count
# (Python's cassandra-driver, not keyplan's code) -> verify --writes --junit (every pattern
# and write passes, measured requests equal the plan's claims where they are exact) ->
# teardown; a seed killed with SIGKILL and rerun gives exact counts; the CQL schema that
# `keyplan emit` writes applies with the real cqlsh (PyPI) on a fresh keyspace.
#
#   tests/integration/cassandra.sh [BUILD_DIR]
#
# Python tools (cqlsh, cassandra-driver) go into .deps/cassandra-py (a venv this script
# makes). A server that cannot be started is a failure, never a skip. Keyspaces are
# prefixed "kpcql_it<pid>_" so parallel runs do not collide.
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-cql.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
source "$here/page_bound.sh"
source "$here/suite_examples.sh"

"$root/scripts/target-cassandra.sh" install >/dev/null || { echo "FAIL: Cassandra could not be installed"; echo "0 passed, 1 failed"; exit 1; }
"$root/scripts/target-cassandra.sh" start || { echo "FAIL: Cassandra did not start"; echo "0 passed, 1 failed"; exit 1; }
url=$("$root/scripts/target-cassandra.sh" url)
host=${url%:*} port=${url##*:}
target=(--target "cassandra=$url")

venv=$root/.deps/cassandra-py
if [[ ! -x $venv/bin/cqlsh ]] || ! "$venv/bin/python" -c 'import cassandra' 2>/dev/null; then
    python3 -m venv "$venv" && "$venv/bin/pip" install -q cqlsh cassandra-driver ||
        { echo "FAIL: cqlsh / cassandra-driver could not be installed from PyPI"; echo "0 passed, 1 failed"; exit 1; }
fi
seed=${KP_TEST_SEED:-$RANDOM}
echo "cassandra integration at $url, random seed $seed (KP_TEST_SEED=$seed replays it)"

# count_rows KEYSPACE TABLE: rows as Cassandra's own driver sees them, plus one per
# partition that holds only static columns (what keyplan counts as a static row).
count_rows() {
    "$venv/bin/python" "$here/cassandra_count.py" "$host" "$port" "$1" "$2"
}

seeded_items() {
    python3 -c 'import json,sys
for c in json.load(open(sys.argv[1]))["databases"][0]["containers"]: print(c["name"], c["items"])' "$1"
}

keyspace_of() { # MODEL PREFIX
    python3 -c 'import json,re,sys
n=sys.argv[2]+json.load(open(sys.argv[1]))["model"]
n=re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", n)
print(re.sub(r"[^a-z0-9]+", "_", n.lower()).strip("_"))' "$1" "$2"
}

counts_match() { # REPORT KEYSPACE
    local name items got
    while read -r name items; do
        got=$(count_rows "$2" "$name")
        if [[ $got != "$items" ]]; then echo "    $2.$name holds $got rows, transform made $items"; return 1; fi
    done < <(seeded_items "$1")
}

# and the every-feature fixture (an N:M listing read from two buckets, ordered by nothing: key order), and
# bucketed-follows (token pages merged from hash buckets, one bucket often holding every row), and
# bucketed-tags (join rows that copy their posts, clustered by the copied publishedAt,
# bucketed and merged with a LIMIT per bucket; a write that moves the copy keying them), and
# range-buckets (range buckets of a date walked in order, both ways, with ties on the date and
# token pages that start past the token's date; a write that moves a row to another bucket; range
# buckets of a uuid and of a title, paged in their order)
examples=("${cassandra_examples[@]}")
for entry in "${examples[@]}"; do
    name=${entry%%:*} scale=${entry##*:}
    model=$root/examples/$name/model.json data=$work/$name prefix=kpcql_it$$_
    [[ -f $model ]] || model=$root/tests/fixtures/models/$name.json
    ks=$(keyspace_of "$model" "$prefix")
    "$keyplan" generate "$model" --out "$data" --scale "$scale" --seed 7 >"$work/gen.out" 2>&1 || { bad "$name: generate"; cat "$work/gen.out"; continue; }
    records=$(cat "$data"/*.ndjson | grep -c .)
    if "$keyplan" seed "$model" --db cassandra --data "$data" --scale "$scale" "${target[@]}" --prefix "$prefix" \
        --format json >"$work/seed.json" 2>"$work/seed.err"; then
        ok "$name: seeded $records records as $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["databases"][0]["items"])' "$work/seed.json") rows"
    else
        bad "$name: seed"; cat "$work/seed.err" "$work/seed.json"
        "$keyplan" teardown "$model" --db cassandra "${target[@]}" --prefix "$prefix" >/dev/null 2>&1
        continue
    fi
    if counts_match "$work/seed.json" "$ks"; then ok "$name: an independent count finds every row transform made, in every table"
    else bad "$name: an independent count differs from what transform made"; fi
    if "$keyplan" verify "$model" --db cassandra --data "$data" --scale "$scale" "${target[@]}" --prefix "$prefix" \
        --samples 5 --pages 5 --seed "$seed" --writes --junit "$work/$name.xml" >"$work/verify.out" 2>&1; then
        ok "$name: every pattern and write verified, claims met ($(grep -c '<testcase' "$work/$name.xml") cases)"
        expect_page_bound "$name" "$model" "$work/verify.out"
    else
        bad "$name: verify"; cat "$work/verify.out"
    fi
    "$keyplan" teardown "$model" --db cassandra "${target[@]}" --prefix "$prefix" >/dev/null 2>&1 || bad "$name: teardown"
done

# a seed killed with SIGKILL, then rerun: exact counts
model=$root/examples/saas-control-plane/model.json data=$work/kill prefix=kpcql_kill$$_
ks=$(keyspace_of "$model" "$prefix")
"$keyplan" generate "$model" --out "$data" --scale 0.01 --seed 11 >/dev/null
delay=$(( (seed % 30) + 20 ))
"$keyplan" seed "$model" --db cassandra --data "$data" --scale 0.01 "${target[@]}" --prefix "$prefix" >/dev/null 2>&1 &
pid=$!
sleep "$((delay / 10)).$((delay % 10))"
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
partial=$(count_rows "$ks" project 2>/dev/null)
if "$keyplan" seed "$model" --db cassandra --data "$data" --scale 0.01 "${target[@]}" --prefix "$prefix" --format json \
        >"$work/resume.json" 2>"$work/resume.err" && counts_match "$work/resume.json" "$ks"; then
    ok "seed killed after $((delay / 10)).$((delay % 10))s (${partial:-0} projects in) and rerun: every table holds exactly the rows transform made"
else
    bad "seed killed after $((delay / 10)).$((delay % 10))s and rerun"; cat "$work/resume.err" "$work/resume.json"
fi
"$keyplan" teardown "$model" --db cassandra "${target[@]}" --prefix "$prefix" >/dev/null 2>&1

# the emitted schema applies with the real cqlsh on a fresh keyspace
for name in saas-control-plane order-response; do
    model=$root/examples/$name/model.json prefix=kpcql_emit$$_
    ks=$(keyspace_of "$model" "$prefix")
    if "$keyplan" emit "$model" --db cassandra --prefix "$prefix" --out "$work/emit-$name" >/dev/null 2>"$work/emit.err" &&
        "$venv/bin/cqlsh" "$host" "$port" -f "$work/emit-$name/cassandra/schema.cql" >"$work/cqlsh.out" 2>&1 &&
        ! grep -qi "error" "$work/cqlsh.out" &&
        tables=$(grep -c '^CREATE TABLE' "$work/emit-$name/cassandra/schema.cql") &&
        [[ $("$venv/bin/cqlsh" "$host" "$port" -e "SELECT count(*) FROM system_schema.tables WHERE keyspace_name = '$ks';" 2>/dev/null |
             grep -E '^ *[0-9]+ *$' | tr -d ' ') == "$tables" ]]; then
        ok "$name: the emitted schema.cql applies with cqlsh on a fresh keyspace ($tables tables)"
    else
        bad "$name: the emitted schema.cql did not apply with cqlsh"; cat "$work/emit.err" "$work/cqlsh.out"
    fi
    "$venv/bin/cqlsh" "$host" "$port" -e "DROP KEYSPACE IF EXISTS $ks;" >/dev/null 2>&1
done

# a record above the node's own mutation limit (max_mutation_size, read from
# system_views.settings: 4 MiB on the local node, below the static 16 MiB) is refused
# with its file:line before anything is created
model=$root/tests/fixtures/models/oversized-notes.json prefix=kpcql_big$$_
mkdir -p "$work/big"
python3 - "$work/big/Note.ndjson" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"id": "n1", "title": "a", "body": "x" * 10}) + "\n")
    f.write(json.dumps({"id": "n2", "title": "b", "body": "y" * (5 * 1024 * 1024)}) + "\n")
    f.write(json.dumps({"id": "n3", "title": "c", "body": "z" * 10}) + "\n")
PY
limit=$("$venv/bin/cqlsh" "$host" "$port" -e "SELECT value FROM system_views.settings WHERE name = 'max_mutation_size_in_kb';" 2>/dev/null |
        grep -E '^ *[0-9]+ *$' | tr -d ' ')
status=0
"$keyplan" seed "$model" --db cassandra "${target[@]}" --data "$work/big" --prefix "$prefix" >"$work/big.out" 2>"$work/big.err" || status=$?
ks=$(keyspace_of "$model" "$prefix")
made=$("$venv/bin/cqlsh" "$host" "$port" -e "SELECT count(*) FROM system_schema.keyspaces WHERE keyspace_name = '$ks';" 2>/dev/null |
       grep -E '^ *[0-9]+ *$' | tr -d ' ')
if [[ $status -eq 2 && -n $limit && $made == 0 ]] && grep -q "Note.ndjson:2:1: .*largest item this cassandra server accepts ($((limit * 1024)) bytes)" "$work/big.err" &&
    ! grep -q "Note.ndjson:[13]:" "$work/big.err"; then
    ok "a 5 MiB record above the node's ${limit} KiB mutation limit: exit 2, named by file:line, nothing created"
else
    bad "oversized record: exit $status, limit '${limit}' KiB, keyspace made '${made}'"; cat "$work/big.err"
fi
"$keyplan" teardown "$model" --db cassandra "${target[@]}" --prefix "$prefix" >/dev/null 2>&1

echo "cassandra: $passed passed, $failed failed"
[[ $failed == 0 ]]
