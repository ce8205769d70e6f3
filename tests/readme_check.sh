#!/usr/bin/env bash
#
# readme_check.sh offline|live KEYPLAN — runs the README's shell blocks, so the README
# cannot drift from what keyplan does. Every ```sh block must be preceded by a marker:
#   <!-- readme: offline -->          run here, with no server (ctest runs this mode)
#   <!-- readme: live -->             run against the local servers (tests/integration/readme.sh, in run.sh)
#   <!-- readme: manual (why) -->     not run, and the reason says what covers it instead
# A block without a marker fails the check. Blocks run with `bash -e` in a scratch folder
# that sees the repository's examples/ and docs/, keyplan on PATH, and scripts/ wrappers
# that call the repository's own scripts.
set -uo pipefail
mode=${1:?usage: readme_check.sh offline|live KEYPLAN}
keyplan=$(cd -- "$(dirname -- "${2:?usage: readme_check.sh offline|live KEYPLAN}")" && pwd)/$(basename -- "$2")
root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-readme.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

mkdir -p "$work/bin" "$work/run/scripts"
ln -s "$keyplan" "$work/bin/keyplan"
ln -s "$root/examples" "$work/run/examples"
ln -s "$root/docs" "$work/run/docs"
for s in "$root"/scripts/*.sh; do
    printf '#!/usr/bin/env bash\nexec %q "$@"\n' "$s" >"$work/run/scripts/$(basename "$s")"
    chmod +x "$work/run/scripts/$(basename "$s")"
done

# split README.md into blocks: block-N.sh and block-N.mode ("offline", "live", "manual ..." or "none")
python3 - "$root/README.md" "$work" <<'PY'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
n, i = 0, 0
while i < len(lines):
    if lines[i].startswith("```sh"):
        n += 1
        marker = lines[i - 1].strip() if i > 0 else ""
        m = re.match(r"<!-- readme: (offline|live|manual \(.+\)) -->$", marker)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        open(f"{sys.argv[2]}/block-{n}.sh", "w").write("\n".join(lines[i + 1:j]) + "\n")
        open(f"{sys.argv[2]}/block-{n}.mode", "w").write((m.group(1) if m else "none") + f"\n{i + 1}\n")
        i = j
    i += 1
PY
for modefile in "$work"/block-*.mode; do
    block=${modefile%.mode}.sh
    kind=$(sed -n 1p "$modefile") line=$(sed -n 2p "$modefile")
    case $kind in
        none) bad "README.md:$line: a shell block without a <!-- readme: offline|live|manual (why) --> marker" ;;
        manual*) [[ $mode == offline ]] && ok "README.md:$line: $kind" ;;
        "$mode")
            if (cd "$work/run" && PATH="$work/bin:$PATH" bash -e "$block") >"$work/out" 2>&1; then
                ok "README.md:$line: the $kind block runs ($(grep -c . "$block") lines)"
            else
                bad "README.md:$line: the $kind block failed"; tail -20 "$work/out"
            fi ;;
    esac
done
echo "readme ($mode): $passed passed, $failed failed"
[[ $failed == 0 ]]
