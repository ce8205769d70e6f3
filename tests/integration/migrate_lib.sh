# migrate_lib.sh — shared by tests/integration/migrate.sh and migrate_kill.sh (sourced, never
# run alone). The caller sets: root, here, build, keyplan, work.

# need_driver — the pinned independent clients in a venv ($py), installed from PyPI once
py=$root/.deps/mutations-py
need_driver() {
    "$py/bin/python" -c 'import cassandra' 2>/dev/null ||
        { python3 -m venv "$py" && "$py/bin/pip" install -q boto3==1.35.99 pymongo==4.10.1 cassandra-driver==3.29.2; }
}

# same_records DIR_A DIR_B — the same records per entity (order and number spelling aside)
same_records() {
    python3 - "$1" "$2" <<'EOF'
import decimal, json, os, sys
def load(d):
    out = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".ndjson"):
            with open(os.path.join(d, f)) as h:
                out[f] = sorted(json.dumps(json.loads(l, parse_float=decimal.Decimal), sort_keys=True, default=str)
                                for l in h if l.strip())
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
for f in sorted(set(a) | set(b)):
    if a.get(f) != b.get(f):
        x, y = set(a.get(f, [])), set(b.get(f, []))
        print(f"{f}: {len(a.get(f, []))} vs {len(b.get(f, []))} records; only in the first: {sorted(x - y)[:2]}; "
              f"only in the second: {sorted(y - x)[:2]}")
        sys.exit(1)
EOF
}

# shellcheck source=tests/integration/faults_lib.sh
source "$here/faults_lib.sh"   # readback: the fault tests' item-for-item check (DynamoDB, MongoDB)

# independent DB URL MODEL_NAME PREFIX EXPORT — the target holds exactly EXPORT
independent() {
    local db=$1 url=$2 name=$3 prefix=$4 export=$5
    case $db in
    dynamodb | mongodb)
        local out
        out=$(readback "$db" "$url" "$name" "$export") || { echo "$out"; return 1; } ;;
    cassandra)
        local host=${url%:*} port=${url##*:} keyspace table want got rc=0
        # the keyspace as keyplan names it (emit writes it into the schema file)
        "$keyplan" emit "$new" --db cassandra --prefix "$prefix" --scale "$scale" --out "$work/emit" >/dev/null 2>&1 || return 1
        keyspace=$(grep -ohE "CREATE KEYSPACE IF NOT EXISTS [A-Za-z0-9_\"]+" "$work"/emit/cassandra/*.cql | head -1 | awk '{print $6}' | tr -d '"')
        while read -r table want; do
            table=${table#"$prefix"}
            got=$("$py/bin/python" "$here/cassandra_count.py" "$host" "$port" "$keyspace" "$table" 2>&1)
            [[ $got == "$want" ]] || { echo "    $table: $got rows, the new design predicts $want"; rc=1; }
        done < <(python3 -c 'import collections,json,sys
c=collections.Counter(json.loads(l)["table"] for l in open(sys.argv[1]))
for t,n in c.items(): print(t,n)' "$export")
        return $rc ;;
    esac
}

# pair_scale OLD — the --scale that gives about 1,000 records whatever the model's counts
pair_scale() {
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); t=sum(e.get("count",0) for e in m["entities"].values()); print("%.6g" % (1000.0/t))' "$1"
}

# model_name MODEL
model_name() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"])' "$1"; }

# prove_new LABEL — after a migration: `keyplan verify NEW --exhaustive` with the data migrate
# wrote must pass, and an independent client must read back exactly the items NEW's design
# makes of it. Uses the caller's keyplan, new, common, mine, db, url, name, prefix, scale, work.
prove_new() {
    local label=$1
    if "$keyplan" verify "$new" "${common[@]}" --data "$mine/new" --exhaustive --seed 3 --quiet >"$work/verify.log" 2>&1; then
        ok "$label: verify NEW --exhaustive passes"
    else
        bad "$label: verify NEW"; grep -vE "^ +[a-z-]+ +pass " "$work/verify.log" | head -30
    fi
    "$keyplan" seed "$new" --db "$db" --data "$mine/new" --scale "$scale" --prefix "$prefix" --dry-run --quiet \
        --export-items "$work/expect.nd" >/dev/null 2>&1 || { bad "$label: seed --dry-run --export-items"; return 1; }
    if independent "$db" "$url" "$name" "$prefix" "$work/expect.nd"; then
        ok "$label: counts exact — an independent client reads back exactly NEW's $(wc -l <"$work/expect.nd") items"
    else
        bad "$label: the independent read-back differs from NEW's design"
    fi
}
