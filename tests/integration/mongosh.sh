#!/usr/bin/env bash
#
# mongosh.sh BUILD_DIR — what `keyplan emit --db mongodb` writes, run with the real
# MongoDB shell (mongosh from npm, pinned by tests/integration/mongosh/package-lock.json
# and installed into .deps/mongosh with npm ci) against FerretDB
# (scripts/target-ferretdb.sh). For every examples/*/model.json:
#
#   setup.mongosh.js   run into the database named after the model (the one seed uses
#                      when the URI names none): it exits 0; it prints its validator
#                      warning once per collection (FerretDB answers NotImplemented to
#                      a $jsonSchema validator; the script goes on without one); every
#                      collection and index it declares is on the server afterwards
#                      (listCollections / getIndexes: name, key in order, unique); a
#                      second run exits 0 and leaves the same collections and indexes.
#   queries.md         the example is generated and seeded (`keyplan seed --db mongodb`,
#                      small scales), and each pattern's finds run in mongosh in order
#                      with their <placeholders> filled from the seeded data
#                      (tests/integration/mongosh_queries.py says how): the first find
#                      of every pattern must run without error, and must return a
#                      document when its values were taken from a seeded record; a later
#                      find must run too when the earlier one returned what it needs.
#                      $or: <after the page token> is left out (the first page has none),
#                      range bounds (<from>, <until>, <since>, <before>, <now>) are
#                      chosen to include every document rather than read from a record.
#                      A pattern whose placeholders cannot be filled is printed as
#                      "not runnable:" with the reason, neither passed nor hidden.
#
# Everything it creates (collections under its prefixes, and the databases when they
# are left empty) is dropped at the end. A failed install or a server that does not
# start is a failure, never a skip. FerretDB runs on its default port; KP_FERRETDB_PORT
# picks another (a server this script started is stopped again at the end). Prints
# one ok:/FAIL: line per check and a closing "N passed, N failed" line.
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
helper=$here/mongosh_queries.py
ferretdb=$root/scripts/target-ferretdb.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-mongosh.XXXXXX")
passed=0 failed=0 unrunnable=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
url='' started_here=0 databases=()
prefix=msh-$$-        # setup.mongosh.js
qprefix=mshq-$$-      # seeded data for the queries
cleanup() {
    local db
    for db in ${url:+"${databases[@]}"}; do
        # collections under our prefixes, then the database if nothing else is left in it
        "$mongosh_bin" "$url$db" --quiet --eval "
            db.getCollectionNames().filter(n => n.startsWith('$prefix') || n.startsWith('$qprefix')).forEach(n => db.getCollection(n).drop());
            if (db.getCollectionNames().length === 0) db.dropDatabase();" >/dev/null 2>&1 ||
            echo "warning: could not drop what this run created in database $db"
    done
    [[ $started_here == 1 ]] && "$ferretdb" stop >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
finish() {
    echo "mongosh: $passed passed, $failed failed$( ((unrunnable > 0)) && echo ", $unrunnable patterns not runnable")"
    [[ $failed == 0 ]]
    exit
}

# ---- mongosh from the lock file ----------------------------------------------------------

lock_dir=$here/mongosh
deps=$root/.deps/mongosh
mongosh_bin=$deps/node_modules/.bin/mongosh
if ! { [[ -x $mongosh_bin ]] && cmp -s "$lock_dir/package-lock.json" "$deps/package-lock.json" &&
        cmp -s "$lock_dir/package.json" "$deps/package.json"; }; then
    echo "installing mongosh with npm ci into ${deps#"$root"/}"
    mkdir -p "$deps"
    cp "$lock_dir/package.json" "$lock_dir/package-lock.json" "$deps/"
    # --ignore-scripts: the install scripts only build optional native add-ons (Kerberos,
    # client-side encryption, OS keychains) that a loopback connection without auth never loads
    if ! (cd "$deps" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) </dev/null >"$work/npm.log" 2>&1 ||
        [[ ! -x $mongosh_bin ]]; then
        tail -n 20 "$work/npm.log"
        rm -f "$deps/package-lock.json"
        bad "mongosh could not be installed with npm ci (output above)"
        finish
    fi
fi
# mongosh keeps logs and history under $HOME; telemetry off (it is off anyway when not interactive in a container)
export HOME=$work/home MONGOSH_FORCE_DISABLE_TELEMETRY_FOR_TESTING=1
mkdir -p "$HOME"
version=$("$mongosh_bin" --version 2>&1) || { bad "mongosh does not run: $version"; finish; }

# ---- FerretDB ------------------------------------------------------------------------------

"$ferretdb" install >/dev/null 2>"$work/install.err" || { cat "$work/install.err"; bad "FerretDB could not be installed"; finish; }
"$ferretdb" status >/dev/null 2>&1 || started_here=1
"$ferretdb" start ${KP_FERRETDB_PORT:+--port "$KP_FERRETDB_PORT"} 2>"$work/start.err" || { cat "$work/start.err"; bad "FerretDB did not start"; finish; }
url=$("$ferretdb" url)
echo "mongosh integration: $version against FerretDB at $url"

mongo() { # DATABASE ARGS... — mongosh on the database, quiet
    local db=$1; shift
    "$mongosh_bin" "$url$db" --quiet "$@"
}

# the collections and their indexes, as JSON, of DATABASE
server_state() {
    mongo "$1" --eval 'EJSON.stringify(db.getCollectionInfos().map(c => ({ name: c.name, indexes: db.getCollection(c.name).getIndexes() })), { relaxed: true })'
}

# ---- setup.mongosh.js --------------------------------------------------------------------

for model in "$root"/examples/*/model.json; do
    name=$(basename "$(dirname "$model")")
    out=$work/emit/$name
    databases+=("$name")
    if ! "$keyplan" emit "$model" --db mongodb --out "$out" --prefix "$prefix" >"$work/emit.out" 2>&1; then
        bad "$name: emit --db mongodb"; cat "$work/emit.out"; continue
    fi
    setup=$out/mongodb/setup.mongosh.js
    collections=$(python3 -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["collections"]))' \
        "$(python3 "$helper" declared "$setup")") || { bad "$name: setup.mongosh.js cannot be read"; continue; }

    if mongo "$name" "$setup" >"$work/setup1.out" 2>&1; then
        missing=()
        for c in $collections; do
            grep -qxF "warning: this server has no collection validators (NotImplemented); $c is created without one" \
                "$work/setup1.out" || missing+=("$c")
        done
        if ((${#missing[@]} == 0)); then
            ok "$name: setup.mongosh.js exits 0 and warns that $(wc -w <<<"$collections") collections are created without a validator (NotImplemented)"
        else
            bad "$name: setup.mongosh.js printed no validator warning for ${missing[*]}"; cat "$work/setup1.out"
        fi
    else
        bad "$name: setup.mongosh.js failed on its first run"; cat "$work/setup1.out"; continue
    fi
    if server_state "$name" >"$work/state.json" 2>&1 && python3 "$helper" compare "$setup" "$work/state.json" >"$work/compare.out"; then
        ok "$name: every declared collection and index is on the server ($(tail -n 1 "$work/compare.out"))"
    else
        bad "$name: collections or indexes missing after setup.mongosh.js"; cat "$work/compare.out" "$work/state.json"
    fi
    if mongo "$name" "$setup" >"$work/setup2.out" 2>&1 && server_state "$name" >"$work/state2.json" 2>&1 &&
        python3 "$helper" compare "$setup" "$work/state2.json" >/dev/null &&
        cmp -s <(python3 -m json.tool --sort-keys "$work/state.json") <(python3 -m json.tool --sort-keys "$work/state2.json"); then
        ok "$name: a second run of setup.mongosh.js exits 0 and leaves the same collections and indexes"
    else
        bad "$name: setup.mongosh.js is not idempotent"; cat "$work/setup2.out"
    fi
    mongo "$name" --eval "db.getCollectionNames().filter(n => n.startsWith('$prefix')).forEach(n => db.getCollection(n).drop())" >/dev/null 2>&1
done

# ---- queries.md on seeded data -------------------------------------------------------------

# model:scale — a few thousand documents each, seeded in seconds
seeded=(saas-control-plane:0.0005 ecommerce-single-table:0.0002 leaderboard:0.00001 order-response:0.00002 auction-mixes:0.0002)
for entry in "${seeded[@]}"; do
    name=${entry%%:*} scale=${entry##*:}
    model=$root/examples/$name/model.json data=$work/data/$name out=$work/emitq/$name
    if ! "$keyplan" generate "$model" --out "$data" --scale "$scale" --seed 7 >"$work/gen.out" 2>&1; then
        bad "$name: generate"; cat "$work/gen.out"; continue
    fi
    if ! "$keyplan" seed "$model" --db mongodb --data "$data" --scale "$scale" --target "mongodb=$url" \
            --prefix "$qprefix" --quiet >"$work/seed.out" 2>&1; then
        bad "$name: seed --db mongodb"; cat "$work/seed.out"; continue
    fi
    if ! "$keyplan" emit "$model" --db mongodb --out "$out" --prefix "$qprefix" --scale "$scale" >/dev/null 2>"$work/emit.err" ||
        ! python3 "$helper" script "$model" "$out/mongodb" "$data" >"$work/queries.js" 2>"$work/script.err"; then
        bad "$name: queries.md could not be turned into a mongosh script"; cat "$work/emit.err" "$work/script.err"
    elif ! mongo "$name" "$work/queries.js" >"$work/queries.out" 2>&1; then
        bad "$name: mongosh could not run the queries"; cat "$work/queries.out"
    else
        while IFS=$'\t' read -r verdict text; do
            case $verdict in
                ok) ok "$name/$text" ;;
                not-runnable) echo "not runnable: $name/$text"; unrunnable=$((unrunnable + 1)) ;;
                *) bad "$name/$text" ;;
            esac
        done < <(python3 - "$work/queries.out" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("KPQ "):
        continue
    r = json.loads(line[4:])
    if "not_runnable" in r:
        print(f"not-runnable\t{r['pattern']}: {r['not_runnable']}")
        continue
    steps, problems, told = r["steps"], [], []
    for i, s in enumerate(steps):
        which = "first find" if i == 0 else f"find {i + 1}"
        if "error" in s:
            problems.append(f"{which} failed: {s['error']} ({s['command']})")
        elif "skipped" in s:
            told.append(f"{which} not run: {s['skipped']}")
        elif s.get("expect") and s.get("documents", 1) == 0:
            problems.append(f"{which} found nothing for values taken from a seeded record ({s['command']})")
        else:
            told.append(f"{s['documents']} documents" if "documents" in s else f"count {s['count']}")
    if problems:
        print(f"FAIL\t{r['pattern']}: " + "; ".join(problems))
    else:
        print(f"ok\t{r['pattern']}: {len(steps)} command{'s' if len(steps) > 1 else ''} ran ({', '.join(told)})")
EOF
        )
    fi
    "$keyplan" teardown "$model" --db mongodb --target "mongodb=$url" --prefix "$qprefix" --scale "$scale" >/dev/null 2>&1 ||
        bad "$name: teardown of the seeded collections"
done

finish
