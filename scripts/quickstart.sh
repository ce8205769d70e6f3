#!/usr/bin/env bash
#
# quickstart.sh — the first command to run: installs what is missing, builds
# keyplan, and runs it on a bundled example. Needs no database server.
#
#   scripts/quickstart.sh
#
# On the SaaS example it validates the model, compares the designs of every database
# (`keyplan compare`), generates sample data and asks the oracle what one access
# pattern must return.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$KP_ROOT"

example=examples/saas-control-plane/model.json
[[ -f $example ]] ||
    kp_die "the bundled example $example is missing from this checkout; nothing to run keyplan on"

kp_section "1/5 dependencies (scripts/deps.sh)"
scripts/deps.sh

kp_section "2/5 build (scripts/build.sh)"
scripts/build.sh build

kp_section "3/5 keyplan check $example"
./build/keyplan check "$example"

kp_section "4/5 keyplan compare $example"
./build/keyplan compare "$example"

data=$(mktemp -d "${TMPDIR:-/tmp}/keyplan-quickstart.XXXXXX")
trap 'rm -rf "$data"' EXIT
kp_section "5/5 keyplan generate + expect (sample data in $data)"
./build/keyplan generate "$example" --out "$data" --scale 0.001 --seed 1
workspace=$(head -n 1 "$data/Workspace.ndjson" | sed -E 's/.*"id":"([^"]*)".*/\1/')
./build/keyplan expect "$example" --data "$data" --scale 0.001 --pattern list-projects-newest --param "id=$workspace"
kp_log "done: keyplan is built at build/keyplan; 'cmake --install build' puts it, its man page and shell completions on your PATH; 'keyplan init DIR' starts a model of your own; README.md shows every command and how to run against live servers"
