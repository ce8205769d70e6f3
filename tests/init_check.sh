#!/usr/bin/env bash
#
# init_check.sh KEYPLAN — `keyplan init` writes models that pass check, advise (each
# database) and compare as written, from the skeleton and from every bundled example; it
# never overwrites without --force (registered with ctest).
set -uo pipefail
keyplan=${1:?usage: init_check.sh KEYPLAN}
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-init.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

"$keyplan" init "$work/start" >"$work/out" 2>&1 && [[ -s $work/start/model.json && -s $work/start/README.md ]] &&
    ok "init writes model.json and README.md" || { bad "init"; cat "$work/out"; }
grep -q '"\$schema"' "$work/start/model.json" && ok "the model names its schema" || bad "no \$schema"
"$keyplan" check "$work/start/model.json" >/dev/null 2>&1 && ok "the skeleton passes check" || bad "the skeleton fails check"
for db in $("$keyplan" help --completion bash | sed -n 's/.*--db) COMPREPLY=($(compgen -W "\(.*\) all".*/\1/p'); do
    "$keyplan" advise "$work/start/model.json" --db "$db" --strict >/dev/null 2>&1 && ok "the skeleton: advise --db $db --strict" ||
        bad "the skeleton: advise --db $db"
done
"$keyplan" compare "$work/start/model.json" --strict >/dev/null 2>&1 && ok "the skeleton: compare --strict" || bad "the skeleton: compare"
for section in entities relations access_patterns writes; do
    grep -q "\*\*$section\*\*" "$work/start/README.md" && ok "the README explains $section" || bad "the README lacks $section"
done
"$keyplan" init "$work/start" >/dev/null 2>&1; rc=$?
[[ $rc == 2 ]] && ok "a second init refuses to overwrite (exit 2)" || bad "a second init exit $rc"
"$keyplan" init "$work/start" --force >/dev/null 2>&1 && ok "--force overwrites" || bad "--force"
for example in $("$keyplan" init --list); do
    "$keyplan" init "$work/$example" --from "$example" >/dev/null 2>&1 &&
    "$keyplan" check "$work/$example/model.json" >/dev/null 2>&1 && ok "init --from $example passes check" ||
        bad "init --from $example"
done
"$keyplan" init "$work/x" --from no-such-example >/dev/null 2>&1; rc=$?
[[ $rc == 2 && ! -e $work/x/model.json ]] && ok "an unknown example is exit 2 and writes nothing" || bad "unknown example: exit $rc"
echo "init: $passed passed, $failed failed"
[[ $failed == 0 ]]
