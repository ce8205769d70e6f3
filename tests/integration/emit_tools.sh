#!/usr/bin/env bash
#
# emit_tools.sh — checks what `keyplan emit` writes for DynamoDB with the real tools
# that consume it, for every example in examples/:
#
#   (a) the AWS CLI: `aws dynamodb create-table --cli-input-json file://create-table.json`
#       against dynalite; describe-table must show the table, keys and indexes asked for;
#       the table is deleted afterwards;
#   (b) cfn-lint on cloudformation.yaml;
#   (c) the sample items of nosql-workbench.json are written (batch-write-item), then
#       `aws dynamodb query --cli-input-json` runs the SaaS example's
#       requests/list-projects-newest.json, its placeholder replaced by a sample
#       workspace's id: the answer must hold that workspace's header item; every other
#       request file (placeholders filled from the sample items, else dummies) must be
#       accepted by the AWS CLI and dynalite;
#   (d) python-jsonschema validates nosql-workbench.json against
#       tests/fixtures/nosql-workbench.schema.json (the schema the C unit test checks too);
#   (e) the SaaS example is generated, seeded and verified on dynalite with
#       KP_TRACE_REQUESTS=1: every Query keyplan sends must be one of its request files,
#       placeholders aside (so the files are what keyplan runs, not a copy of it).
#
#   tests/integration/emit_tools.sh [BUILD_DIR]     BUILD_DIR holds keyplan (default: build,
#                                                   or $KP_BUILD_DIR)
#
# The tools go into a virtualenv outside the repository, /tmp/kp-tools (override with
# KP_TOOLS_VENV): python3 -m venv, then pip install awscli cfn-lint jsonschema from
# PyPI (needs python3 with its venv module, and the network). dynalite is started with
# scripts/target-dynalite.sh (Node.js >= 20) unless it already runs on 127.0.0.1:18000,
# and stopped again when this script started it. Every check prints "ok ..."; any
# failure, a missing tool included, stops the script with a non-zero status.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
cd "$KP_ROOT"

case ${1:-} in -h|--help) kp_usage "${BASH_SOURCE[0]}"; exit 0 ;; esac
BUILD_DIR=$(kp_build_path "${1:-${KP_BUILD_DIR:-build}}")
KEYPLAN=$BUILD_DIR/keyplan
VENV=${KP_TOOLS_VENV:-/tmp/kp-tools}
ENDPOINT=http://127.0.0.1:18000
CHECK="python3 $KP_ROOT/tests/integration/emit_check.py"
[[ -x $KEYPLAN ]] || kp_die "$KEYPLAN does not exist: build keyplan first (scripts/build.sh, or cmake --build build)"

# ---- tools ------------------------------------------------------------------------------------
kp_section "tools (virtualenv $VENV)"
kp_have python3 || kp_die "python3 is not installed; it is needed for the AWS CLI, cfn-lint and jsonschema"
if [[ ! -x $VENV/bin/pip ]]; then
    python3 -m venv "$VENV" ||
        kp_die "python3 -m venv $VENV failed (on Debian/Ubuntu: apt-get install python3-venv)"
fi
"$VENV/bin/pip" install --quiet --disable-pip-version-check awscli cfn-lint jsonschema ||
    kp_die "pip install awscli cfn-lint jsonschema failed (is PyPI reachable?)"
AWS=$VENV/bin/aws
CFN_LINT=$VENV/bin/cfn-lint
PYTHON=$VENV/bin/python
CHECK="$PYTHON $KP_ROOT/tests/integration/emit_check.py"
for tool in "$AWS" "$CFN_LINT" "$PYTHON"; do
    [[ -x $tool ]] || kp_die "$tool is missing after pip install"
done
kp_log "ok   $("$AWS" --version 2>&1 | head -n 1)"
kp_log "ok   cfn-lint $("$CFN_LINT" --version 2>&1 | awk '{print $NF}')"

# ---- dynalite and the AWS CLI's environment ------------------------------------------------------
WORK=$(mktemp -d /tmp/kp-emit-tools-XXXXXX)
STARTED_DYNALITE=0
TABLES=()
cleanup() {
    local status=$?
    for t in "${TABLES[@]}"; do
        "$AWS" dynamodb delete-table --table-name "$t" --endpoint-url "$ENDPOINT" >/dev/null 2>&1 || true
    done
    [[ $STARTED_DYNALITE == 1 ]] && scripts/target-dynalite.sh stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
# nothing from the developer's own AWS configuration: fake keys, no profile, no pager
export AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x AWS_DEFAULT_REGION=us-east-1 AWS_PAGER=
export AWS_CONFIG_FILE=$WORK/aws-config AWS_SHARED_CREDENTIALS_FILE=$WORK/aws-credentials AWS_EC2_METADATA_DISABLED=true
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_DYNAMODB
kp_section "dynalite ($ENDPOINT)"
[[ -x scripts/target-dynalite.sh ]] || kp_die "scripts/target-dynalite.sh is missing: it starts the local DynamoDB"
if scripts/target-dynalite.sh status >/dev/null 2>&1; then
    [[ $(scripts/target-dynalite.sh url) == "$ENDPOINT" ]] ||
        kp_die "dynalite runs at $(scripts/target-dynalite.sh url), not $ENDPOINT; stop it first"
    kp_log "ok   dynalite already running at $ENDPOINT (left running)"
else
    scripts/target-dynalite.sh install
    scripts/target-dynalite.sh start
    STARTED_DYNALITE=1
    kp_log "ok   dynalite started at $ENDPOINT"
fi
ddb() { "$AWS" dynamodb "$@" --endpoint-url "$ENDPOINT" --output json; }

# ---- emit every example --------------------------------------------------------------------------
PREFIX="kpemit-$$-"
EXAMPLES=()
for model in examples/*/model.json; do EXAMPLES+=("$(basename "$(dirname "$model")")"); done
[[ ${#EXAMPLES[@]} -gt 0 ]] || kp_die "no examples/*/model.json found"
kp_section "keyplan emit (${#EXAMPLES[@]} examples, prefix $PREFIX)"
for name in "${EXAMPLES[@]}"; do
    "$KEYPLAN" emit "examples/$name/model.json" --db dynamodb --out "$WORK/$name" --prefix "$PREFIX" >"$WORK/$name.emit.log" ||
        { cat "$WORK/$name.emit.log" >&2; kp_die "keyplan emit failed for $name"; }
    kp_log "ok   $name: $(grep -c '^  ' "$WORK/$name.emit.log") files"
done

# ---- (d) the Workbench models against the JSON Schema ------------------------------------------------
kp_section "(d) nosql-workbench.json against tests/fixtures/nosql-workbench.schema.json"
models=()
for name in "${EXAMPLES[@]}"; do models+=("$WORK/$name/dynamodb/nosql-workbench.json"); done
$CHECK schema tests/fixtures/nosql-workbench.schema.json "${models[@]}" | sed "s|$WORK/||" >&2 ||
    kp_die "a Workbench model does not validate"

# ---- (b) cfn-lint ------------------------------------------------------------------------------------
kp_section "(b) cfn-lint cloudformation.yaml"
for name in "${EXAMPLES[@]}"; do
    template=$WORK/$name/dynamodb/cloudformation.yaml
    "$CFN_LINT" --format parseable "$template" >&2 || kp_die "cfn-lint found problems in $name's cloudformation.yaml (above)"
    kp_log "ok   $name/dynamodb/cloudformation.yaml: cfn-lint reports nothing"
done

# ---- (a) create-table with the AWS CLI, describe-table ---------------------------------------------------
kp_section "(a) aws dynamodb create-table --cli-input-json file://create-table.json"
for name in "${EXAMPLES[@]}"; do
    dir=$WORK/$name/dynamodb
    table=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["TableName"])' "$dir/create-table.json")
    ddb create-table --cli-input-json "file://$dir/create-table.json" >"$WORK/$name.create.json" ||
        kp_die "aws dynamodb create-table rejected $name's create-table.json"
    TABLES+=("$table")
    "$AWS" dynamodb wait table-exists --table-name "$table" --endpoint-url "$ENDPOINT" ||
        kp_die "$table did not become ACTIVE"
    ddb describe-table --table-name "$table" >"$WORK/$name.describe.json" || kp_die "describe-table $table failed"
    $CHECK indexes "$dir/create-table.json" "$WORK/$name.describe.json" >&2 || kp_die "$table is not what create-table.json asked for"
done

# ---- (c) sample items, then the request files with the AWS CLI ------------------------------------------
kp_section "(c) the sample items, then aws dynamodb query|get-item|batch-get-item|scan --cli-input-json"
for name in "${EXAMPLES[@]}"; do
    dir=$WORK/$name/dynamodb
    mkdir -p "$WORK/$name/items" "$WORK/$name/filled"
    count=$($CHECK items "$dir/nosql-workbench.json" "$WORK/$name/items")
    for batch in "$WORK/$name/items"/*.json; do
        ddb batch-write-item --cli-input-json "file://$batch" >"$batch.answer" ||
            kp_die "batch-write-item rejected the sample items of $name ($batch)"
        grep -q '"UnprocessedItems": {}' "$batch.answer" || kp_die "dynalite left sample items of $name unprocessed"
    done
    kp_log "ok   $name: $count sample items written with batch-write-item"
done

# the one query whose answer is known: the SaaS workspace page returns the workspace header
saas=$WORK/saas-control-plane/dynamodb
[[ -f $saas/requests/list-projects-newest.json ]] || kp_die "the SaaS example has no requests/list-projects-newest.json"
bound=$($CHECK fill "$saas/requests/list-projects-newest.json" "$saas/nosql-workbench.json" "$WORK/list-projects-newest.json")
ddb query --cli-input-json "file://$WORK/list-projects-newest.json" >"$WORK/list-projects-newest.answer.json" ||
    kp_die "aws dynamodb query rejected requests/list-projects-newest.json ($bound)"
n=$($CHECK answer "$WORK/list-projects-newest.answer.json" 1 Workspace) ||
    kp_die "requests/list-projects-newest.json ($bound) did not return the workspace's header item"
kp_log "ok   saas-control-plane list-projects-newest.json ($bound): query returned $n items, the Workspace header among them"

# every request file is a request the AWS CLI and the server accept
for name in "${EXAMPLES[@]}"; do
    dir=$WORK/$name/dynamodb
    n=0
    for request in "$dir"/requests/*.json; do
        file=$(basename "$request")
        command=$($CHECK command "$request") || kp_die "$name's requests/$file is no DynamoDB request keyplan emits"
        $CHECK fill "$request" "$dir/nosql-workbench.json" "$WORK/$name/filled/$file" >/dev/null ||
            kp_die "could not fill the placeholders of $name's $file"
        ddb "$command" --cli-input-json "file://$WORK/$name/filled/$file" >"$WORK/$name/filled/$file.answer" ||
            kp_die "aws dynamodb $command rejected $name's requests/$file"
        n=$((n + 1))
    done
    kp_log "ok   $name: all $n request files accepted by the AWS CLI and dynalite"
done

# ---- (e) what keyplan sends is what the files say ----------------------------------------------------------
kp_section "(e) keyplan verify's Query requests against the SaaS request files"
VPREFIX="${PREFIX}v-"
saas_model=examples/saas-control-plane/model.json
"$KEYPLAN" generate "$saas_model" --out "$WORK/saas-data" --scale 0.0005 --seed 3 >/dev/null ||
    kp_die "keyplan generate failed for the SaaS example"
"$KEYPLAN" emit "$saas_model" --db dynamodb --out "$WORK/saas-v" --prefix "$VPREFIX" --scale 0.0005 >/dev/null ||
    kp_die "keyplan emit --scale 0.0005 failed for the SaaS example"
TABLES+=("${VPREFIX}saas-control-plane")
"$KEYPLAN" seed "$saas_model" --db dynamodb --data "$WORK/saas-data" --target "dynamodb=$ENDPOINT" --prefix "$VPREFIX" \
    --scale 0.0005 >"$WORK/seed.log" 2>&1 || { tail -n 20 "$WORK/seed.log" >&2; kp_die "keyplan seed failed (above)"; }
KP_TRACE_REQUESTS=1 "$KEYPLAN" verify "$saas_model" --db dynamodb --data "$WORK/saas-data" --target "dynamodb=$ENDPOINT" \
    --prefix "$VPREFIX" --scale 0.0005 --seed 5 --samples 10 --pages 5 >"$WORK/verify.log" 2>"$WORK/trace.txt" ||
    { tail -n 20 "$WORK/verify.log" "$WORK/trace.txt" >&2; kp_die "keyplan verify failed on the SaaS example (above)"; }
result=$($CHECK match "$WORK/trace.txt" "$WORK/saas-v/dynamodb/requests") ||
    kp_die "keyplan verify sent a Query that no request file of the SaaS example describes (above)"
kp_log "ok   saas-control-plane: $result"

# ---- done: delete the tables -----------------------------------------------------------------------------
kp_section "cleanup"
for t in "${TABLES[@]}"; do
    ddb delete-table --table-name "$t" >/dev/null || kp_die "delete-table $t failed"
done
kp_log "ok   deleted ${#TABLES[@]} tables"
TABLES=()
kp_log "all checks passed"
