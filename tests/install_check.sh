#!/usr/bin/env bash
#
# install_check.sh BUILD_DIR — `cmake --install` into a temporary prefix puts keyplan, its
# manual page, the bash and zsh completions, the model schema and the examples where a
# packager expects them, and the installed binary runs (registered with ctest).
# The man page must hold every command's usage line, as `keyplan help COMMAND` prints it.
set -uo pipefail
build=$(cd -- "${1:?usage: install_check.sh BUILD_DIR}" && pwd)
prefix=$(mktemp -d "${TMPDIR:-/tmp}/kp-install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }

if cmake --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1; then ok "cmake --install --prefix $prefix"
else bad "cmake --install"; cat "$prefix.log"; fi
rm -f "$prefix.log"
version=$("$prefix/bin/keyplan" --version 2>&1) && [[ $version == keyplan\ * ]] && ok "the installed keyplan runs: $version" ||
    bad "the installed keyplan --version: $version"
for f in share/man/man1/keyplan.1 share/bash-completion/completions/keyplan share/zsh/site-functions/_keyplan \
         share/keyplan/model.schema.json share/keyplan/examples/saas-control-plane/model.json; do
    [[ -s $prefix/$f ]] && ok "installed $f" || bad "missing $f"
done
# the man page and `keyplan help` are the same texts
for verb in $("$prefix/bin/keyplan" help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1}'); do
    usage=$("$prefix/bin/keyplan" help "$verb" | head -1)
    man_text=$(sed -e 's/\\-/-/g' -e 's/\\e/\\/g' -e 's/^\\&//' "$prefix/share/man/man1/keyplan.1")
    grep -qF -- "$usage" <<<"$man_text" && ok "man keyplan holds '$usage'" || bad "man keyplan lacks the usage of $verb"
done
bash -n "$prefix/share/bash-completion/completions/keyplan" && ok "the bash completion parses" || bad "the bash completion"
if command -v man >/dev/null; then
    man -l "$prefix/share/man/man1/keyplan.1" >/dev/null 2>&1 && ok "man -l renders keyplan(1)" || bad "man -l keyplan(1)"
fi
# init finds the installed examples
if "$prefix/bin/keyplan" init "$prefix/start" --from leaderboard >/dev/null 2>&1 &&
   "$prefix/bin/keyplan" check "$prefix/start/model.json" >/dev/null 2>&1 &&
   grep -q "\"\$schema\": \"$prefix/bin/../share/keyplan/model.schema.json\"" "$prefix/start/model.json"; then
    ok "the installed keyplan init --from leaderboard uses the installed examples and schema, and passes check"
else
    bad "installed init --from leaderboard"
fi
# the packaging recipe: a tarball of the same files, whose keyplan runs
if command -v cpack >/dev/null; then
    if (cd "$build" && cpack -G TGZ -B "$prefix/pkg" >"$prefix/cpack.log" 2>&1); then
        tarball=$(ls "$prefix"/pkg/keyplan-*.tar.gz 2>/dev/null | head -1)
        mkdir -p "$prefix/unpacked"
        if [[ -n $tarball ]] && tar -xzf "$tarball" -C "$prefix/unpacked" &&
           "$(ls -d "$prefix"/unpacked/keyplan-*/bin/keyplan)" --version >/dev/null 2>&1 &&
           [[ -s $(ls -d "$prefix"/unpacked/keyplan-*)/share/man/man1/keyplan.1 ]]; then
            ok "cpack -G TGZ packs keyplan, its man page and the rest; the packed keyplan runs"
        else
            bad "the cpack tarball ($tarball) lacks keyplan or its man page"
        fi
    else
        bad "cpack -G TGZ"; cat "$prefix/cpack.log"
    fi
fi
echo "install: $passed passed, $failed failed"
[[ $failed == 0 ]]
