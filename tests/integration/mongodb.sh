#!/usr/bin/env bash
#
# mongodb.sh BUILD_DIR — generate -> seed -> verify (with --writes) for every example
# on a real FerretDB (scripts/target-ferretdb.sh), at the scales dynamodb.sh uses; an
# independent count of the seeded documents (tests/mongo_count: libmongoc's
# countDocuments, not keyplan's read-back) against the documents transform made; a
# seed killed with SIGKILL and rerun ends with exact counts. Prints one line per check
# and a closing "N passed, N failed" line.
#
# FerretDB's SQLite handler answers only _id look-ups from an index and reads a whole
# collection for anything else, so this suite takes minutes, not seconds.
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
counter=$build/tests/mongo_count
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-mongo.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
source "$here/page_bound.sh"
source "$here/suite_examples.sh"

"$root/scripts/target-ferretdb.sh" install >/dev/null || { echo "FAIL: FerretDB could not be installed"; echo "0 passed, 1 failed"; exit 1; }
"$root/scripts/target-ferretdb.sh" start || { echo "FAIL: FerretDB did not start"; echo "0 passed, 1 failed"; exit 1; }
url=$("$root/scripts/target-ferretdb.sh" url)
target=(--target "mongodb=$url")
seed=${KP_TEST_SEED:-$RANDOM}
echo "mongodb integration at $url, random seed $seed (KP_TEST_SEED=$seed replays it)"
[[ -x $counter ]] || { echo "FAIL: tests/mongo_count was not built"; echo "0 passed, 1 failed"; exit 1; }

# "COLLECTION ITEMS" lines from a `seed --format json` report
seeded_items() {
    python3 -c 'import json,sys
for c in json.load(open(sys.argv[1]))["databases"][0]["containers"]: print(c["name"], c["items"])' "$1"
}

# true when every collection of the seed report holds exactly its items (counted independently);
# keyplan uses the model's name as the database when the URI names none
counts_match() { # REPORT DATABASE PREFIX
    local name items got
    while read -r name items; do
        got=$("$counter" "$url" "$2" "$3$name" | awk '{print $2}')
        if [[ $got != "$items" ]]; then echo "    $3$name holds $got documents, transform made $items"; return 1; fi
    done < <(seeded_items "$1")
}

# example scale: at most ~6,600 records each, half of dynamodb.sh's: FerretDB's SQLite
# handler reads a whole collection for every non-_id find (~200 ms a request at 12,000
# documents, and verify --writes sends ~450 on auction-mixes), and twice the records prove
# nothing more here. (FerretDB's PostgreSQL handler was measured too: 8.8 s against 10.2 s
# for the same 102 verify requests; not worth a PostgreSQL server in every CI run.)
# and the every-feature fixture (multi-hop and N:M listings the pattern orders by nothing: key order), the
# three examples from reference designs (hotel-reservations, product-catalog, forum), join-pages (N:M listings paged in the join documents' order) and
# bucketed-tags (join documents that copy their posts, paged by the copied publishedAt)
examples=("${mongodb_examples[@]}")
for entry in "${examples[@]}"; do
    name=${entry%%:*} scale=${entry##*:}
    model=$root/examples/$name/model.json data=$work/$name prefix=it-$$-
    [[ -f $model ]] || model=$root/tests/fixtures/models/$name.json
    "$keyplan" generate "$model" --out "$data" --scale "$scale" --seed 7 >"$work/gen.out" 2>&1 || { bad "$name: generate"; cat "$work/gen.out"; continue; }
    records=$(cat "$data"/*.ndjson | grep -c .)
    if "$keyplan" seed "$model" --db mongodb --data "$data" --scale "$scale" "${target[@]}" --prefix "$prefix" \
        --format json >"$work/seed.json" 2>"$work/seed.err"; then
        ok "$name: seeded $records records as $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["databases"][0]["items"])' "$work/seed.json") documents"
    else
        bad "$name: seed"; cat "$work/seed.err" "$work/seed.json"; continue
    fi
    if counts_match "$work/seed.json" "$name" "$prefix"; then ok "$name: an independent count finds every document transform made, in every collection"
    else bad "$name: an independent count differs from what transform made"; fi
    if "$keyplan" verify "$model" --db mongodb --data "$data" --scale "$scale" "${target[@]}" --prefix "$prefix" \
        --samples 5 --pages 5 --seed "$seed" --writes --junit "$work/$name.xml" >"$work/verify.out" 2>&1; then
        ok "$name: every pattern and write verified ($(grep -c '<testcase' "$work/$name.xml") cases)"
        expect_page_bound "$name" "$model" "$work/verify.out"
    else
        bad "$name: verify"; cat "$work/verify.out"
    fi
    "$keyplan" teardown "$model" --db mongodb "${target[@]}" --prefix "$prefix" >/dev/null 2>&1 || bad "$name: teardown"
done

# buy-again reads a user's orders for a page of their lines, 51 newest first; when the 51st
# ties with the 50th on placedAt, the orders of that instant next (plan.c held_page): orders
# whose placedAt runs in tens, for five users, send that read, and the page is still right
model=$root/examples/order-response/model.json data=$work/ties prefix=tie-$$-
"$keyplan" generate "$model" --out "$data" --scale 0.00001 --seed 7 >/dev/null &&
    python3 "$here/tie_orders.py" "$data" 5 10 &&
    "$keyplan" seed "$model" --db mongodb --data "$data" --scale 0.00001 "${target[@]}" --prefix "$prefix" --quiet \
        >"$work/seed.out" 2>&1 ||
    { bad "order-response with tying orders: generate and seed"; cat "$work/seed.out"; }
if "$keyplan" verify "$model" --db mongodb --data "$data" --scale 0.00001 "${target[@]}" --prefix "$prefix" \
        --samples 5 --pages 1 --seed 3 --format json >"$work/ties.json" 2>"$work/ties.err" &&
    python3 -c 'import json,sys
p = [p for d in json.load(open(sys.argv[1]))["databases"] for p in d["patterns"] if p["name"] == "buy-again"][0]
sys.exit(not (p["result"] == "pass" and p["requests"]["first_page_max"] == 3 and p["sequential_steps"]["first_page_max"] == 2))' \
        "$work/ties.json"; then
    ok "order-response with tying orders: buy-again's tie read sent (3 requests in 2 round trips) and every page right"
else
    bad "order-response with tying orders: verify"; cat "$work/ties.err"; head -c 3000 "$work/ties.json"
fi
"$keyplan" teardown "$model" --db mongodb "${target[@]}" --prefix "$prefix" >/dev/null 2>&1

# compare's reference design (recommended for order-response): the order lines in a
# collection of their own copy their order's userId, which buy-again's one find selects by
model=$root/examples/order-response/model.json data=$work/reference prefix=ref-$$-
"$keyplan" generate "$model" --out "$data" --scale 0.00001 --seed 7 >/dev/null &&
    "$keyplan" seed "$model" --db mongodb --candidate reference --data "$data" --scale 0.00001 "${target[@]}" \
        --prefix "$prefix" --quiet >"$work/seed.out" 2>&1 ||
    { bad "order-response, reference design: generate and seed"; cat "$work/seed.out"; }
if "$keyplan" verify "$model" --db mongodb --candidate reference --data "$data" --scale 0.00001 "${target[@]}" \
        --prefix "$prefix" --samples 5 --pages 2 --seed "$seed" --writes --format json >"$work/reference.json" 2>"$work/reference.err" &&
    python3 -c 'import json,sys
p = [p for d in json.load(open(sys.argv[1]))["databases"] for p in d["patterns"] if p["name"] == "buy-again"][0]
sys.exit(not (p["result"] == "pass" and p["requests"]["first_page_max"] == 2 and p["measured"]["items_read_max"] <= 51))' \
        "$work/reference.json"; then
    ok "order-response, reference design: every pattern and write verified; buy-again reads one find of lines, at most 51 documents"
else
    bad "order-response, reference design: verify"; cat "$work/reference.err"; head -c 3000 "$work/reference.json"
fi
"$keyplan" teardown "$model" --db mongodb "${target[@]}" --prefix "$prefix" >/dev/null 2>&1 || bad "order-response, reference design: teardown"

# compare's other MongoDB designs of the examples (embedding what the recommended design
# references, or referencing what it embeds), on the data the loop above generated: seeded
# and verified with writes, so a claim or a result only an alternative makes is checked too
for entry in ecommerce-single-table:0.0001:reference hotel-reservations:0.0005:embed hotel-reservations:0.0005:reference \
             leaderboard:0.000005:embed product-catalog:0.0004:embed; do
    IFS=: read -r name scale candidate <<<"$entry"
    model=$root/examples/$name/model.json data=$work/$name prefix=alt-$$-
    if "$keyplan" seed "$model" --db mongodb --candidate "$candidate" --data "$data" --scale "$scale" "${target[@]}" \
            --prefix "$prefix" --quiet >"$work/seed.out" 2>&1 &&
        "$keyplan" verify "$model" --db mongodb --candidate "$candidate" --data "$data" --scale "$scale" "${target[@]}" \
            --prefix "$prefix" --samples 3 --pages 2 --seed "$seed" --writes --junit "$work/alt.xml" >"$work/verify.out" 2>&1; then
        ok "$name, $candidate design: every pattern and write verified ($(grep -c '<testcase' "$work/alt.xml") cases)"
    else
        bad "$name, $candidate design: seed or verify"; cat "$work/seed.out" "$work/verify.out"
    fi
    "$keyplan" teardown "$model" --db mongodb "${target[@]}" --prefix "$prefix" >/dev/null 2>&1 || bad "$name, $candidate design: teardown"
done

# a seed killed with SIGKILL, then the same command again: exact counts, no duplicates
model=$root/examples/saas-control-plane/model.json data=$work/kill prefix=kill-$$-
"$keyplan" generate "$model" --out "$data" --scale 0.01 --seed 11 >/dev/null
records=$(cat "$data"/*.ndjson | grep -c .)
delay=$(( (seed % 20) + 5 ))
"$keyplan" seed "$model" --db mongodb --data "$data" --scale 0.01 "${target[@]}" --prefix "$prefix" >/dev/null 2>&1 &
pid=$!
sleep "$((delay / 10)).$((delay % 10))"
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
partial=$("$counter" "$url" saas-control-plane "${prefix}Project" 2>/dev/null | awk '{print $2}')
if "$keyplan" seed "$model" --db mongodb --data "$data" --scale 0.01 "${target[@]}" --prefix "$prefix" --format json \
        >"$work/resume.json" 2>"$work/resume.err" &&
    counts_match "$work/resume.json" saas-control-plane "$prefix" &&
    [[ $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["databases"][0]["items"])' "$work/resume.json") == "$records" ]]; then
    ok "seed killed after $((delay / 10)).$((delay % 10))s (${partial:-0} projects in) and rerun: exactly $records documents"
else
    bad "seed killed after $((delay / 10)).$((delay % 10))s and rerun"; cat "$work/resume.err" "$work/resume.json"
fi
"$keyplan" teardown "$model" --db mongodb "${target[@]}" --prefix "$prefix" >/dev/null 2>&1

echo "mongodb: $passed passed, $failed failed"
[[ $failed == 0 ]]
