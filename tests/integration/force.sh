#!/usr/bin/env bash
#
# force.sh BUILD_DIR — no command drops, truncates or overwrites data it did not
# write without --force (issue #8), on the real local servers:
#  - DynamoDB: a table created and filled outside keyplan (plain HTTP calls to
#    dynalite, no marker) under the name keyplan's design uses: `seed` and `teardown`
#    exit non-zero with a message saying why, and the table still holds exactly its
#    items, byte for byte; `seed --force` replaces it (that is what --force is for).
#  - MongoDB: collections seeded from another version of the model: `seed` and
#    `teardown` of this model refuse without --force and every document stays
#    (counted by tests/mongo_count, libmongoc alone).
# Prints one line per check and "N passed, N failed".
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
counter=$build/tests/mongo_count
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-force.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

for t in dynalite ferretdb; do
    "$root/scripts/target-$t.sh" install >/dev/null 2>&1 || bad "$t could not be installed"
    "$root/scripts/target-$t.sh" start >/dev/null 2>&1 || bad "$t did not start"
done
ddb=$("$root/scripts/target-dynalite.sh" url)
mongo=$("$root/scripts/target-ferretdb.sh" url)
model=$root/examples/saas-control-plane/model.json scale=0.0005 prefix=kpsec-force-$$-
"$keyplan" generate "$model" --out "$work/data" --scale "$scale" --seed 9 >/dev/null 2>&1 || bad "generate"

# ---- DynamoDB: a foreign table --------------------------------------------------------
"$keyplan" emit "$model" --out "$work/emit" --db dynamodb --prefix "$prefix" --scale "$scale" >/dev/null 2>&1 || bad "emit"
table=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["TableName"])' "$work/emit/dynamodb/create-table.json")
# dynalite wants a SigV4-shaped Authorization header but does not check it
ddb_call() { # OPERATION JSON
    curl -sS -X POST "$ddb" -H "X-Amz-Target: DynamoDB_20120810.$1" -H 'Content-Type: application/x-amz-json-1.0' \
        -H 'X-Amz-Date: 20260101T000000Z' \
        -H 'Authorization: AWS4-HMAC-SHA256 Credential=foreign/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
        -d "$2"
}
ddb_call CreateTable "{\"TableName\":\"$table\",\"BillingMode\":\"PAY_PER_REQUEST\",\"AttributeDefinitions\":[{\"AttributeName\":\"PK\",\"AttributeType\":\"S\"},{\"AttributeName\":\"SK\",\"AttributeType\":\"S\"}],\"KeySchema\":[{\"AttributeName\":\"PK\",\"KeyType\":\"HASH\"},{\"AttributeName\":\"SK\",\"KeyType\":\"RANGE\"}]}" >/dev/null
sleep 1
for i in 1 2 3; do
    ddb_call PutItem "{\"TableName\":\"$table\",\"Item\":{\"PK\":{\"S\":\"precious#$i\"},\"SK\":{\"S\":\"row\"},\"note\":{\"S\":\"not keyplan's $i\"}}}" >/dev/null
done
scan() { ddb_call Scan "{\"TableName\":\"$table\",\"ConsistentRead\":true}" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(sorted(d.get("Items",[]), key=json.dumps), sort_keys=True))'; }
before=$(scan)
[[ $(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])))' "$before") == 3 ]] && ok "dynamodb: a foreign table $table with 3 items" || bad "dynamodb: foreign table not set up: $before"

common=(--db dynamodb --data "$work/data" --scale "$scale" --prefix "$prefix" --target "dynamodb=$ddb")
"$keyplan" seed "$model" "${common[@]}" >"$work/seed.out" 2>&1
status=$?
if [[ $status -eq 2 ]] && grep -q "keyplan did not create\|--force" "$work/seed.out"; then ok "dynamodb: seed refuses the foreign table (exit 2): $(grep -m1 error "$work/seed.out")"
else bad "dynamodb: seed on a foreign table exited $status"; cat "$work/seed.out"; fi
[[ $(scan) == "$before" ]] && ok "dynamodb: after seed the foreign table holds exactly its 3 items" || bad "dynamodb: seed changed the foreign table"

"$keyplan" teardown "$model" --db dynamodb --scale "$scale" --prefix "$prefix" --target "dynamodb=$ddb" >"$work/td.out" 2>&1
status=$?
[[ $status -ne 0 ]] && ok "dynamodb: teardown refuses the foreign table (exit $status): $(grep -m1 error "$work/td.out")" || { bad "dynamodb: teardown of a foreign table succeeded"; cat "$work/td.out"; }
[[ $(scan) == "$before" ]] && ok "dynamodb: after teardown the foreign table holds exactly its 3 items" || bad "dynamodb: teardown changed the foreign table"

"$keyplan" verify "$model" "${common[@]}" --writes --samples 2 --pages 5 --seed 1 >"$work/verify.out" 2>&1
status=$?
[[ $status -ne 0 ]] && ok "dynamodb: verify --writes refuses a table keyplan did not seed (exit $status)" || bad "dynamodb: verify --writes ran on a foreign table"
[[ $(scan) == "$before" ]] && ok "dynamodb: after verify --writes the foreign table holds exactly its 3 items" || bad "dynamodb: verify --writes changed the foreign table"

"$keyplan" seed "$model" "${common[@]}" --force >"$work/force.out" 2>&1 && ok "dynamodb: seed --force replaces the foreign table" || { bad "dynamodb: seed --force"; tail -3 "$work/force.out"; }
"$keyplan" teardown "$model" --db dynamodb --scale "$scale" --prefix "$prefix" --target "dynamodb=$ddb" >/dev/null 2>&1 || bad "dynamodb: teardown after --force"

# ---- MongoDB: collections another version of the model seeded ------------------------------
other=$work/other-model.json
python3 - "$model" "$other" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["access_patterns"][0]["rps"] = m["access_patterns"][0].get("rps", 1) + 1   # another version: another hash
json.dump(m, open(sys.argv[2], "w"), indent=1)
PY
mcommon=(--db mongodb --data "$work/data" --scale "$scale" --prefix "$prefix" --target "mongodb=$mongo")
"$keyplan" seed "$other" "${mcommon[@]}" --format json >"$work/mseed.json" 2>"$work/mseed.err" && ok "mongodb: seeded from another version of the model" || { bad "mongodb: seed of the other model"; cat "$work/mseed.err"; }
db=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"])' "$model")
counts() { for c in Workspace Project; do "$counter" "$mongo" "$db" "$prefix$c" 2>/dev/null; done | tr '\n' ' '; }
mbefore=$(counts)
"$keyplan" seed "$model" "${mcommon[@]}" >"$work/m2.out" 2>&1
status=$?
[[ $status -eq 2 ]] && ok "mongodb: seed of this model refuses (exit 2): $(grep -m1 error "$work/m2.out")" || { bad "mongodb: seed over another model's data exited $status"; cat "$work/m2.out"; }
"$keyplan" teardown "$model" --db mongodb --scale "$scale" --prefix "$prefix" --target "mongodb=$mongo" >"$work/m3.out" 2>&1
status=$?
[[ $status -ne 0 ]] && ok "mongodb: teardown of this model refuses (exit $status)" || bad "mongodb: teardown removed another model's collections"
[[ $(counts) == "$mbefore" && -n ${mbefore// /} ]] && ok "mongodb: every document stays ($mbefore)" || bad "mongodb: documents changed: $mbefore -> $(counts)"
"$keyplan" teardown "$other" --db mongodb --scale "$scale" --prefix "$prefix" --target "mongodb=$mongo" >/dev/null 2>&1 || bad "mongodb: cleanup teardown"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
