#!/usr/bin/env bash
#
# secrets.sh BUILD_DIR — credentials are never printed (issue #8). Every command
# (check, advise, compare in every format, emit, generate, expect, seed, verify --writes
# with JUnit and JSON, run — the gate with its reports —, teardown) runs with known fake
# secrets in the environment and in the profile files (AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, a password in MONGODB_URI,
# CASSANDRA_PASSWORD, a profile in a private ~/.aws) against the real local servers,
# with the request tracing switched on (KP_TRACE_REQUESTS, KP_MONGO_DEBUG), and in
# failing cases: a closed port, a non-loopback host over plain text, user information
# in an endpoint, a malformed connection string carrying the password. Then every
# stdout/stderr, report, JUnit file, emitted file and generated file is searched for
# the secrets: any hit fails. Prints one line per check and "N passed, N failed".
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-secrets.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

for t in dynalite ferretdb cassandra; do
    "$root/scripts/target-$t.sh" install >/dev/null 2>&1 || { bad "$t could not be installed"; }
    "$root/scripts/target-$t.sh" start >/dev/null 2>&1 || { bad "$t did not start"; }
done
ddb=$("$root/scripts/target-dynalite.sh" url)
mongo=$("$root/scripts/target-ferretdb.sh" url)      # mongodb://127.0.0.1:28017/

# the fake secrets (each unique enough that a hit can only be a leak)
SECRET_KEY=kpsecFAKEsecretKey0wJalrXUtnFEMIK7MDENG
SESSION_TOKEN=kpsecFAKEsessionToken0FwoGZXIvYXdzEJr
PROFILE_SECRET=kpsecFAKEprofileSecret0bPxRfiCYEXAMPLE
MONGO_PASSWORD=kpsecFAKEmongoPassword0x
CASSANDRA_SECRET=kpsecFAKEcassandraPassword0
secrets=("$SECRET_KEY" "$SESSION_TOKEN" "$PROFILE_SECRET" "$MONGO_PASSWORD" "$CASSANDRA_SECRET")

export HOME=$work/home
mkdir -p "$HOME/.aws"
printf '[kpsec]\naws_access_key_id = AKIAKPSECPROFILE0001\naws_secret_access_key = %s\nregion = eu-west-1\n' \
    "$PROFILE_SECRET" >"$HOME/.aws/credentials"
export AWS_ACCESS_KEY_ID=AKIAKPSECFAKE0000001 AWS_SECRET_ACCESS_KEY=$SECRET_KEY AWS_SESSION_TOKEN=$SESSION_TOKEN
export AWS_REGION=us-east-1
export CASSANDRA_USERNAME=kpsec CASSANDRA_PASSWORD=$CASSANDRA_SECRET
export KP_TRACE_REQUESTS=1 KP_MONGO_DEBUG=1
# FerretDB here runs without authentication and refuses any password (SCRAM): the
# seeded runs take the URI without one from MONGODB_URI, and the password goes into
# the failing cases below (refused authentication, bad URIs), where it is echoed most
export MONGODB_URI=$mongo
mongo_with_password="mongodb://kpsec:$MONGO_PASSWORD@${mongo#mongodb://}"

model=$root/examples/saas-control-plane/model.json scale=0.0005 prefix=kpsec-$$-
out=$work/out
mkdir -p "$out"
n=0
run_env=()   # extra `env` arguments for the next runs
# run NAME EXPECTED_STATUS(any|0|nonzero) ARGS... — every output kept under $out
run() {
    local name=$1 want=$2
    shift 2
    n=$((n + 1))
    env "${run_env[@]}" "$keyplan" "$@" >"$out/$n-$name.stdout" 2>"$out/$n-$name.stderr"
    local status=$?
    case $want in
        0) [[ $status -eq 0 ]] && ok "$name" || { bad "$name exited $status"; tail -5 "$out/$n-$name.stderr"; } ;;
        nonzero) [[ $status -ne 0 ]] && ok "$name fails (exit $status)" || bad "$name should have failed" ;;
        *) ok "$name ran (exit $status)" ;;
    esac
}

run check 0 check "$model"
run advise 0 advise "$model" --db all --format json
run advise-md 0 advise "$model" --db all --format md
run emit 0 emit "$model" --out "$out/emit" --db all --prefix "$prefix"
run generate 0 generate "$model" --out "$out/data" --scale "$scale" --seed 5
pattern=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["access_patterns"][0]["name"])' "$model")
run expect 0 expect "$model" --data "$out/data" --pattern "$pattern" --sample 1 --scale "$scale"

for db in dynamodb mongodb cassandra; do
    case $db in
        dynamodb) t=(--target "dynamodb=$ddb") ;;
        mongodb) t=() ;;                             # from MONGODB_URI
        cassandra) t=(--target cassandra=127.0.0.1:19042) ;;
    esac
    common=(--db "$db" --data "$out/data" --scale "$scale" --prefix "$prefix" "${t[@]}")
    run "$db-seed" 0 seed "$model" "${common[@]}" --format json
    run "$db-seed-again" 0 seed "$model" "${common[@]}"
    run "$db-verify" 0 verify "$model" "${common[@]}" --seed 3 --samples 3 --pages 5 --writes --junit "$out/$db-junit.xml" --format json
    run "$db-verify-dry-run" 0 verify "$model" "${common[@]}" --dry-run
    run "$db-teardown" 0 teardown "$model" --db "$db" --scale "$scale" --prefix "$prefix" "${t[@]}"
done

# compare (every format) and the gate, which seeds, verifies --writes and writes reports
run compare 0 compare "$model" --format json
run compare-md 0 compare "$model" --format md
run compare-html 0 compare "$model" --format html
run gate 0 run "$model" --db all --data "$out/data" --scale "$scale" --prefix "${prefix}gate-" --out "$out/gate" \
    --seed 3 --samples 2 --pages 5 --target "dynamodb=$ddb" --target cassandra=127.0.0.1:19042
run gate-teardown 0 teardown "$model" --db all --scale "$scale" --prefix "${prefix}gate-" --target "dynamodb=$ddb" \
    --target cassandra=127.0.0.1:19042

# failing cases: every message about them must still keep the secrets out
run ddb-closed-port nonzero seed "$model" --db dynamodb --data "$out/data" --scale "$scale" --prefix "$prefix" --target dynamodb=http://127.0.0.1:1
run ddb-userinfo nonzero seed "$model" --db dynamodb --data "$out/data" --scale "$scale" --target "dynamodb=http://AKIAKPSEC:$SECRET_KEY@127.0.0.1:18000"
run ddb-plain-remote nonzero seed "$model" --db dynamodb --data "$out/data" --scale "$scale" --target dynamodb=http://192.0.2.1:18000
run_env=(-u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN AWS_PROFILE=kpsec)
run ddb-profile-remote nonzero seed "$model" --db dynamodb --data "$out/data" --scale "$scale" --target dynamodb=https://127.0.0.1:1
run ddb-profile-loopback 0 verify "$model" --db dynamodb --data "$out/data" --scale "$scale" --target "dynamodb=$ddb" --dry-run
run_env=()
run mongo-auth-refused nonzero seed "$model" --db mongodb --data "$out/data" --scale "$scale" --target "mongodb=$mongo_with_password"
run_env=(MONGODB_URI=$mongo_with_password)
run mongo-auth-refused-env nonzero verify "$model" --db mongodb --data "$out/data" --scale "$scale"
run_env=()
run mongo-closed-port nonzero seed "$model" --db mongodb --data "$out/data" --scale "$scale" --target "mongodb=mongodb://kpsec:$MONGO_PASSWORD@127.0.0.1:1/?serverSelectionTimeoutMS=500"
run mongo-bad-uri nonzero seed "$model" --db mongodb --data "$out/data" --scale "$scale" --target "mongodb=mongodb://kpsec:$MONGO_PASSWORD@127.0.0.1:notaport/"
run mongo-slash-in-password nonzero seed "$model" --db mongodb --data "$out/data" --scale "$scale" --target "mongodb=mongodb://kpsec:a/$MONGO_PASSWORD@127.0.0.1:28017/"
run mongo-bad-option nonzero seed "$model" --db mongodb --data "$out/data" --scale "$scale" --target "mongodb=mongodb://kpsec:$MONGO_PASSWORD@127.0.0.1:28017/?authMechanism=NOPE"
run cassandra-closed-port nonzero seed "$model" --db cassandra --data "$out/data" --scale "$scale" --target cassandra=127.0.0.1:1
run cassandra-userinfo nonzero seed "$model" --db cassandra --data "$out/data" --scale "$scale" --target "cassandra=kpsec:$CASSANDRA_SECRET@127.0.0.1:19042"
run cassandra-plain-remote nonzero seed "$model" --db cassandra --data "$out/data" --scale "$scale" --target cassandra=192.0.2.1:19042

# the search: every file keyplan wrote or printed
files=$(find "$out" -type f | wc -l)
leaks=0
for s in "${secrets[@]}"; do
    if grep -rlF -- "$s" "$out" >"$work/hits"; then
        leaks=1
        bad "secret ${s:0:14}... appears in: $(tr '\n' ' ' <"$work/hits")"
    fi
done
[[ $leaks -eq 0 ]] && ok "none of the ${#secrets[@]} secrets appears in the $files files of output, reports, JUnit, emitted and generated files"
# the search must be able to find something: a file holding a secret is found
echo "x $MONGO_PASSWORD y" >"$work/canary"
grep -qF -- "$MONGO_PASSWORD" "$work/canary" && ok "the search finds a planted secret" || bad "the search cannot find a planted secret"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
