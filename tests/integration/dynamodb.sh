#!/usr/bin/env bash
#
# dynamodb.sh BUILD_DIR — generate -> seed -> verify (with --writes) for every example
# on a real dynalite, in the recommended design and in compare's normalised alternative;
# an independent read-back of the seeded items; a seed killed with SIGKILL and rerun ends
# with exact counts. Prints one line per check and a closing "N passed, N failed" line.
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-ddb.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
source "$here/page_bound.sh"
source "$here/suite_examples.sh"

"$root/scripts/target-dynalite.sh" install >/dev/null || { echo "FAIL: dynalite could not be installed"; echo "0 passed, 1 failed"; exit 1; }
"$root/scripts/target-dynalite.sh" start || { echo "FAIL: dynalite did not start"; echo "0 passed, 1 failed"; exit 1; }
url=$("$root/scripts/target-dynalite.sh" url)
target=(--target "dynamodb=$url")
seed=${KP_TEST_SEED:-$RANDOM}
echo "dynamodb integration at $url, random seed $seed (KP_TEST_SEED=$seed replays it)"

# items in a table, counted by a client independent of keyplan's (Python's standard library)
count_items() {
    python3 - "$url" "$1" <<'PY'
import json, sys, urllib.request
url, table = sys.argv[1], sys.argv[2]
count, start = 0, None
while True:
    body = {"TableName": table, "Select": "COUNT", "ConsistentRead": True}
    if start: body["ExclusiveStartKey"] = start
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
        "X-Amz-Target": "DynamoDB_20120810.Scan", "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Date": "20260101T000000Z",
        "Authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"})
    answer = json.load(urllib.request.urlopen(req))
    count += answer["Count"]
    start = answer.get("LastEvaluatedKey")
    if not start: break
print(count - 1)  # keyplan's marker item
PY
}

# the HTTP client itself: batch writes, paging, errors, connection reuse
if [[ -x $build/tests/ddb_client_live ]]; then
    if "$build/tests/ddb_client_live" --endpoint "$url" >"$work/client.out" 2>&1; then ok "the DynamoDB client against dynalite"
    else bad "the DynamoDB client against dynalite (exit $?)"; tail -20 "$work/client.out"; fi
else
    bad "tests/ddb_client_live was not built"
fi

# example scale: at most ~13,000 records each, so the whole run stays within minutes; the
# every-feature fixture too (a filtered token-paged listing whose page only the client can cut), and
# bucketed-follows (N:M listings of ids, token pages of 3 and 2, answered from the join items), and
# join-pages (N:M listings of the targets' attributes, pages of 1 and 2 in the join items' order), and
# bucketed-tags (the posts of a tag newest first, from the join items)
examples=("${dynamodb_examples[@]}")
for entry in "${examples[@]}"; do
    name=${entry%%:*} scale=${entry##*:}
    model=$root/examples/$name/model.json data=$work/$name prefix=it-$$-
    [[ -f $model ]] || model=$root/tests/fixtures/models/$name.json
    "$keyplan" generate "$model" --out "$data" --scale "$scale" --seed 7 >"$work/gen.out" 2>&1 || { bad "$name: generate"; cat "$work/gen.out"; continue; }
    records=$(cat "$data"/*.ndjson | grep -c .)
    if "$keyplan" seed "$model" --db dynamodb --data "$data" --scale "$scale" "${target[@]}" --prefix "$prefix" \
        --format json >"$work/seed.out" 2>"$work/seed.err"; then
        ok "$name: seeded $records records"
    else
        bad "$name: seed"; cat "$work/seed.err" "$work/seed.out"; continue
    fi
    # one item per record, plus an element item per distinct element of an array an adjacency list indexes
    items=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["databases"][0]["items"])' "$work/seed.out")
    got=$(count_items "${prefix}${name}")
    if [[ $got == "$items" && $items -ge $records ]]; then ok "$name: an independent read-back finds the $items items transform produced"
    else bad "$name: an independent read-back found $got items, expected $items (from $records records)"; fi
    if "$keyplan" verify "$model" --db dynamodb --data "$data" --scale "$scale" "${target[@]}" --prefix "$prefix" \
        --samples 5 --pages 5 --seed "$seed" --writes --junit "$work/$name.xml" >"$work/verify.out" 2>&1; then
        ok "$name: every pattern and write verified ($(grep -c '<testcase' "$work/$name.xml") cases)"
        expect_page_bound "$name" "$model" "$work/verify.out"
    else
        bad "$name: verify"; cat "$work/verify.out"
    fi
    "$keyplan" teardown "$model" --db dynamodb "${target[@]}" --prefix "$prefix" >/dev/null 2>&1 || bad "$name: teardown"
done

# compare's alternative, the normalised design (no item collections: every entity in its own
# partitions, related items through indexes), seeded and verified with writes on the same data:
# an N:M walked forward there once queried the join items by a key it could not know
for entry in "${examples[@]}"; do
    name=${entry%%:*} scale=${entry##*:}
    model=$root/examples/$name/model.json data=$work/$name prefix=nm-$$-
    [[ -f $model ]] || model=$root/tests/fixtures/models/$name.json
    [[ -d $data ]] || continue
    if "$keyplan" seed "$model" --db dynamodb --candidate normalised --data "$data" --scale "$scale" "${target[@]}" \
            --prefix "$prefix" --quiet >"$work/seed.out" 2>&1 &&
        "$keyplan" verify "$model" --db dynamodb --candidate normalised --data "$data" --scale "$scale" "${target[@]}" \
            --prefix "$prefix" --samples 5 --pages 5 --seed "$seed" --writes >"$work/verify.out" 2>&1; then
        ok "$name, normalised design: seeded, every pattern and write verified"
    else
        bad "$name, normalised design"; tail -20 "$work/seed.out" "$work/verify.out"
    fi
    "$keyplan" teardown "$model" --db dynamodb "${target[@]}" --prefix "$prefix" >/dev/null 2>&1 || bad "$name, normalised design: teardown"
done

# a value of the wrong type on the server (an int stored as a string) is a mismatch of the
# pattern that returns it, with its JSON path — exit 1, and the run goes on; never exit 3
model=$root/examples/saas-control-plane/model.json data=$work/wrongtype prefix=wt-$$-
"$keyplan" generate "$model" --out "$data" --scale 0.001 --seed 7 >/dev/null 2>&1
if "$keyplan" seed "$model" --db dynamodb --data "$data" --scale 0.001 "${target[@]}" --prefix "$prefix" --quiet >/dev/null 2>&1; then
    python3 - "$url" "${prefix}saas-control-plane" <<'PY'
import json, sys, urllib.request
url, table = sys.argv[1], sys.argv[2]
def call(target, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
        "X-Amz-Target": "DynamoDB_20120810." + target, "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Date": "20260101T000000Z",
        "Authorization": "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"})
    return json.load(urllib.request.urlopen(req))
items = call("Scan", {"TableName": table, "FilterExpression": "attribute_exists(activeProjects)"})["Items"]
for item in items:  # every workspace item: whichever anchor verify draws meets one
    call("UpdateItem", {"TableName": table, "Key": {"PK": item["PK"], "SK": item["SK"]},
                        "UpdateExpression": "SET activeProjects = :s", "ExpressionAttributeValues": {":s": {"S": "30"}}})
back = call("Scan", {"TableName": table, "FilterExpression": "attribute_type(activeProjects, :t)",
                     "ExpressionAttributeValues": {":t": {"S": "S"}}})["Items"]
assert items and len(back) == len(items), (len(items), len(back))
PY
    [[ $? == 0 ]] && ok "wrong-type: every workspace's activeProjects rewritten as a string, read back independently" ||
        bad "wrong-type: could not rewrite activeProjects"
    "$keyplan" verify "$model" --db dynamodb --data "$data" --scale 0.001 "${target[@]}" --prefix "$prefix" \
        --samples 5 --pages 5 --seed 1 >"$work/wrongtype.out" 2>&1
    vrc=$?
    if [[ $vrc == 1 ]] && grep -q 'activeProjects' "$work/wrongtype.out" && grep -q 'wrong type' "$work/wrongtype.out" &&
       grep -q 'list-projects-newest' "$work/wrongtype.out"; then
        ok "wrong-type: verify exits 1 naming the value's path and the type found, and checks the other patterns too"
    else
        bad "wrong-type: verify exit $vrc (want 1, the path and the other patterns)"; cat "$work/wrongtype.out"
    fi
else
    bad "wrong-type: seed"
fi
"$keyplan" teardown "$model" --db dynamodb "${target[@]}" --prefix "$prefix" >/dev/null 2>&1

# a seed killed with SIGKILL, then the same command again: exact counts, no duplicates
model=$root/examples/saas-control-plane/model.json data=$work/kill prefix=kill-$$-
"$keyplan" generate "$model" --out "$data" --scale 0.01 --seed 11 >/dev/null
records=$(cat "$data"/*.ndjson | grep -c .)
delay=$(( (seed % 20) + 5 ))
"$keyplan" seed "$model" --db dynamodb --data "$data" --scale 0.01 "${target[@]}" --prefix "$prefix" >/dev/null 2>&1 &
pid=$!
sleep "0.$delay"
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
partial=$(count_items "${prefix}saas-control-plane" 2>/dev/null || echo 0)
if "$keyplan" seed "$model" --db dynamodb --data "$data" --scale 0.01 "${target[@]}" --prefix "$prefix" >"$work/resume.out" 2>&1 &&
    [[ $(count_items "${prefix}saas-control-plane") == "$records" ]]; then
    ok "seed killed after 0.${delay}s ($partial items in) and rerun: exactly $records items"
else
    bad "seed killed after 0.${delay}s and rerun"; cat "$work/resume.out"
fi
"$keyplan" teardown "$model" --db dynamodb "${target[@]}" --prefix "$prefix" >/dev/null 2>&1

echo "dynamodb: $passed passed, $failed failed"
[[ $failed == 0 ]]
