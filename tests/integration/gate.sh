#!/usr/bin/env bash
#
# gate.sh BUILD_DIR — `keyplan run`, the design-review gate, against the real local
# servers (issue #7):
#   1. saas-control-plane on all three databases: exit 0, report.json says passed for
#      every database (every pattern and every write passed, no defect), junit.xml has
#      one test case per pattern and write with no failure, report.md fits a PR comment;
#      and the gate leaves nothing behind (the writes it replayed are undone: the seeded
#      counts equal the data's records).
#   2. tests/fixtures/models/blog-join-defect.json on DynamoDB, whose design has a defect (a
#      listing through a join entity whose items cannot give the keys it reads, with a
#      two-attribute tag key no adjacency list takes): exit 1, and the reports name the
#      defect.
#   3. bad input: a data folder that does not exist → exit 2 and nothing created.
# Prints one line per check and "N passed, N failed".
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-gate.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

for t in dynalite ferretdb cassandra; do
    "$root/scripts/target-$t.sh" install >/dev/null 2>&1 || bad "$t could not be installed"
    "$root/scripts/target-$t.sh" start >/dev/null 2>&1 || bad "$t did not start"
done
ddb=$("$root/scripts/target-dynalite.sh" url)
mongo=$("$root/scripts/target-ferretdb.sh" url)
cql=$("$root/scripts/target-cassandra.sh" url)
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
seed=${KP_TEST_SEED:-$((RANDOM % 10000))}
echo "gate: random seed $seed (KP_TEST_SEED=$seed replays it)"
targets=(--target "dynamodb=$ddb" --target "mongodb=$mongo" --target "cassandra=$cql")

# ---- 1. a passing gate on all three databases -----------------------------------------
model=$root/examples/saas-control-plane/model.json scale=0.0005
prefix=gate-$$-
"$keyplan" generate "$model" --scale "$scale" --seed "$seed" --out "$work/saas-data" >/dev/null 2>&1 ||
    bad "generate saas-control-plane"
status=0
"$keyplan" run "$model" --db all --scale "$scale" --data "$work/saas-data" --out "$work/saas-out" --prefix "$prefix" \
    --seed "$seed" --samples 3 --pages 5 --quiet "${targets[@]}" >"$work/saas.stdout" 2>"$work/saas.stderr" || status=$?
if [[ $status -eq 0 ]]; then
    ok "run saas-control-plane --db all exits 0"
else
    bad "run saas-control-plane --db all exited $status"
    tail -20 "$work/saas.stderr"
fi
records=$(cat "$work/saas-data"/*.ndjson | wc -l)
if python3 - "$work/saas-out" "$model" "$records" >"$work/saas.check" 2>&1 <<'EOF'; then
import json, sys, os, xml.etree.ElementTree as ET
out, model_path, records = sys.argv[1], sys.argv[2], int(sys.argv[3])
model = json.load(open(model_path))
patterns = len(model["access_patterns"])
writes = len(model.get("write_patterns", model.get("writes", [])))
r = json.load(open(os.path.join(out, "report.json")))
assert r["command"] == "run" and r["passed"] is True, "report.json: passed is not true"
dbs = {d["database"]: d for d in r["databases"]}
assert sorted(dbs) == ["cassandra", "dynamodb", "mongodb"], f"databases {sorted(dbs)}"
for name, d in dbs.items():
    assert d["passed"] is True and not d["defects"], f"{name}: passed {d['passed']}, defects {d['defects']}"
    assert d["seed"]["complete"] is True and d["seed"]["records"] == records, \
        f"{name}: seeded {d['seed']['records']} records of {records}"
    v = d["verify"]
    results = [p["result"] for p in v["patterns"]]
    assert len(results) == patterns and set(results) == {"pass"}, f"{name}: pattern results {results}"
    w = [x["result"] for x in v.get("writes", [])]
    assert len(w) == writes and set(w) <= {"pass"}, f"{name}: write results {w} for {writes} writes"
root = ET.parse(os.path.join(out, "junit.xml")).getroot()
tests, failures = int(root.get("tests")), int(root.get("failures"))
# one case per pattern and write, and one per container read back against the data
containers = sum(len(d["verify"].get("containers") or []) for d in dbs.values())
assert containers >= 3 and all(c["result"] == "pass" for d in dbs.values() for c in d["verify"]["containers"]), \
    f"containers read back: {containers}"
assert tests == 3 * (patterns + writes) + containers and failures == 0, f"junit: {tests} tests, {failures} failures"
md = open(os.path.join(out, "report.md")).read()
assert len(md) <= 65536 and "PASSED" in md.splitlines()[0], f"report.md: {len(md)} characters, first line {md.splitlines()[0]!r}"
print(f"3 databases x ({patterns} patterns + {writes} writes) passed; {records} records seeded in each; report.md {len(md)} characters")
EOF
    ok "reports of the passing gate: $(cat "$work/saas.check")"
else
    bad "reports of the passing gate: $(tail -3 "$work/saas.check")"
fi
# the gate's own --writes are undone: a verify (read-only) of the same target still passes
status=0
"$keyplan" verify "$model" --db all --scale "$scale" --data "$work/saas-data" --prefix "$prefix" --seed "$seed" \
    --samples 3 --pages 5 --quiet "${targets[@]}" >"$work/saas-verify.out" 2>&1 || status=$?
[[ $status -eq 0 ]] && ok "after the gate the seeded targets still verify (its writes were undone)" ||
    { bad "verify after the gate exited $status"; tail -10 "$work/saas-verify.out"; }
"$keyplan" teardown "$model" --db all --scale "$scale" --prefix "$prefix" "${targets[@]}" >/dev/null 2>&1 ||
    bad "teardown of the gate's targets"

# ---- 2. a defect fails the gate ---------------------------------------------------------
model=$root/tests/fixtures/models/blog-join-defect.json scale=0.0002
prefix=gate-bt-$$-
"$keyplan" generate "$model" --scale "$scale" --seed "$seed" --out "$work/am-data" >/dev/null 2>&1 || bad "generate blog-join-defect"
status=0
"$keyplan" run "$model" --db dynamodb --scale "$scale" --data "$work/am-data" --out "$work/am-out" --prefix "$prefix" \
    --seed "$seed" --samples 2 --pages 5 --quiet --target "dynamodb=$ddb" >"$work/am.stdout" 2>"$work/am.stderr" || status=$?
[[ $status -eq 1 ]] && ok "run blog-join-defect --db dynamodb exits 1 (a defect)" || bad "run blog-join-defect --db dynamodb exited $status, not 1"
if python3 - "$work/am-out" >"$work/am.check" 2>&1 <<'EOF'; then
import json, sys, os
out = sys.argv[1]
r = json.load(open(os.path.join(out, "report.json")))
assert r["passed"] is False, "report.json says passed"
d = r["databases"][0]
assert d["database"] == "dynamodb" and d["passed"] is False
# posts-by-tag reads Post items whose keys the join items cannot give
bad = [x for x in d["defects"] if "posts-by-tag" in x]
assert bad, f"defects {d['defects']}"
md = open(os.path.join(out, "report.md")).read()
assert "FAILED" in md.splitlines()[0] and "posts-by-tag" in md
print(f"{len(d['defects'])} defect(s) named in report.json and report.md")
EOF
    ok "reports of the failing gate: $(cat "$work/am.check")"
else
    bad "reports of the failing gate: $(tail -3 "$work/am.check")"
fi
"$keyplan" teardown "$model" --db dynamodb --scale "$scale" --prefix "$prefix" --target "dynamodb=$ddb" >/dev/null 2>&1 ||
    bad "teardown of blog-join-defect"

# ---- 3. bad input ----------------------------------------------------------------------
status=0
"$keyplan" run "$root/examples/saas-control-plane/model.json" --db dynamodb --data "$work/no-such-data" \
    --out "$work/bad-out" --prefix "gate-bad-$$-" --target "dynamodb=$ddb" >"$work/bad.out" 2>&1 || status=$?
tables=$(AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local python3 - "$ddb" "gate-bad-$$-" <<'EOF' 2>/dev/null
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=b"{}", headers={
    "X-Amz-Target": "DynamoDB_20120810.ListTables", "Content-Type": "application/x-amz-json-1.0", "X-Amz-Date": "20260101T000000Z",
    "Authorization": "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0"})
names = json.load(urllib.request.urlopen(req))["TableNames"]
print(sum(1 for n in names if n.startswith(sys.argv[2])))
EOF
)
if [[ $status -eq 2 && $tables == 0 ]] && grep -q "no-such-data" "$work/bad.out"; then
    ok "a missing data folder: exit 2, named in the message, no table created"
else
    bad "a missing data folder: exit $status, tables created '${tables:-?}': $(head -3 "$work/bad.out")"
fi

echo "gate: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
