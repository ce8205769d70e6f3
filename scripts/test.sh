#!/usr/bin/env bash
#
# test.sh — runs keyplan's tests. With no option: the whole suite.
#
#   scripts/test.sh                 unit tests (ctest) in build/, then the integration
#                                   tests against local live servers (when present); the
#                                   servers' installs start in the background first, so
#                                   that they overlap the build (.deps/install-*.log)
#   scripts/test.sh --unit          unit tests only
#   scripts/test.sh --asan          the same in build-asan/ (AddressSanitizer, UBSan,
#                                   leak checking); combine with --unit
#   scripts/test.sh --fuzz SECONDS  only the fuzz targets: builds build-fuzz/ with
#                                   clang and runs each target for SECONDS
#
# Every run first calls scripts/deps.sh (fast when nothing is missing) and
# scripts/build.sh. Exit status: 0 when every test passed, non-zero otherwise.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
cd "$KP_ROOT"

mode=tests            # tests | fuzz
unit_only=0
sanitize=0
fuzz_seconds=

while [[ $# -gt 0 ]]; do
    case $1 in
        --unit) unit_only=1 ;;
        --asan) sanitize=1 ;;
        --fuzz)
            [[ $# -ge 2 ]] || kp_die "--fuzz needs a number of seconds per target" 2
            mode=fuzz fuzz_seconds=$2
            shift ;;
        --fuzz=*) mode=fuzz fuzz_seconds=${1#--fuzz=} ;;
        -h|--help) kp_usage "${BASH_SOURCE[0]}"; exit 0 ;;
        *) kp_die "unknown option '$1' (try --help)" 2 ;;
    esac
    shift
done
if [[ $mode == fuzz ]]; then
    [[ $fuzz_seconds =~ ^[1-9][0-9]*$ ]] || kp_die "--fuzz takes a whole number of seconds ≥ 1, not '$fuzz_seconds'" 2
    [[ $sanitize == 0 && $unit_only == 0 ]] || kp_die "--fuzz runs only the fuzz targets; it does not combine with --asan or --unit" 2
fi

scripts/deps.sh

# ---- the local servers' installs, in the background ----------------------------------
# On a fresh machine they are downloads (npm, Maven) and FerretDB's Go build (5-10
# minutes on 2 cores). Started before the build, they overlap it, the unit tests and
# the first suites. Each install holds a lock (kp_locked in scripts/lib.sh): the suite
# that needs a server asks for its install as always, waits for the one running here and
# then finds it done; when it failed, the suite's install tries again and fails the suite
# with the reason. The Go build runs at a lower priority so that the build and the unit
# tests, which come first, are not slowed by it.
background_pids=() background_names=() background_logs=()

start_background_installs() {
    mkdir -p .deps
    nice -n 10 scripts/target-ferretdb.sh install </dev/null >.deps/install-ferretdb.log 2>&1 &
    background_pids+=("$!") background_names+=(FerretDB) background_logs+=(.deps/install-ferretdb.log)
    # one after the other: either may run apt-get, which must not run twice at once
    (
        status=0
        scripts/target-dynalite.sh install || status=1
        scripts/target-cassandra.sh install || status=1
        exit "$status"
    ) </dev/null >.deps/install-dynalite-cassandra.log 2>&1 &
    background_pids+=("$!") background_names+=("dynalite and Cassandra") background_logs+=(.deps/install-dynalite-cassandra.log)
    kp_log "installing the local servers in the background: FerretDB; dynalite, then Cassandra (logs .deps/install-*.log)"
}

# Waits for the background installs (the suites have waited for them already) and says
# how each ended.
report_background_installs() {
    local i status
    for i in "${!background_pids[@]}"; do
        status=0
        wait "${background_pids[$i]}" || status=$?
        if [[ $status -eq 0 ]]; then
            kp_log "background install of ${background_names[$i]}: done (log ${background_logs[$i]})"
        else
            kp_warn "background install of ${background_names[$i]} failed (exit status $status; log ${background_logs[$i]}); the suite that needed it tried again and said why above"
        fi
    done
    background_pids=()
}

# On an early exit (a failed build or unit test): say what is still installing.
note_background_installs() {
    local i
    for i in "${!background_pids[@]}"; do
        kill -0 "${background_pids[$i]}" 2>/dev/null || continue
        kp_log "the background install of ${background_names[$i]} is still running and finishes on its own (log ${background_logs[$i]})"
    done
}

# ---- unit tests, then integration tests ---------------------------------------------
run_tests() {
    local build_dir=build
    local -a cmake_args=()
    if [[ $sanitize == 1 ]]; then
        build_dir=build-asan
        cmake_args=(-DKP_SANITIZE=ON)
        # Leaks and undefined behaviour fail the test that caused them.
        export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
        export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    fi

    if [[ $unit_only == 0 && -f tests/integration/run.sh ]]; then
        trap note_background_installs EXIT
        start_background_installs
    fi

    kp_section "build $build_dir/"
    scripts/build.sh "$build_dir" "${cmake_args[@]}"

    kp_section "unit tests ($build_dir/)"
    ctest --test-dir "$build_dir" --output-on-failure -j2 ||
        kp_die "unit tests failed in $build_dir/ (the failing tests' output is above)"

    if [[ $unit_only == 1 ]]; then
        kp_log "--unit: integration tests skipped"
        return
    fi

    # Integration hook: tests/integration/run.sh starts the local live servers and
    # runs the examples against them (added by the backend issues). It receives the
    # build directory as its argument and in KP_BUILD_DIR.
    kp_section "integration tests ($build_dir/)"
    if [[ -f tests/integration/run.sh ]]; then
        local status=0
        KP_BUILD_DIR="$KP_ROOT/$build_dir" bash tests/integration/run.sh "$KP_ROOT/$build_dir" || status=$?
        report_background_installs
        [[ $status -eq 0 ]] || kp_die "integration tests failed (tests/integration/run.sh, output above)"
    else
        kp_log "no integration tests yet (tests/integration/run.sh does not exist); skipped"
    fi
}

# ---- fuzz targets ---------------------------------------------------------------------
run_fuzz() {
    local build_dir=build-fuzz
    kp_have clang || kp_die "clang is needed for the fuzz targets; run scripts/deps.sh"

    kp_section "build $build_dir/ (clang, libFuzzer)"
    scripts/build.sh "$build_dir" -DKP_FUZZ=ON -DKP_TESTS=OFF -DCMAKE_C_COMPILER=clang

    local -a sources=(tests/fuzz/fuzz_*.c) targets=()
    local source name
    [[ -e ${sources[0]} ]] || sources=()
    for source in "${sources[@]}"; do
        name=$(basename "$source" .c)
        [[ -x $build_dir/tests/$name ]] ||
            kp_die "tests/fuzz/$name.c exists but $build_dir/tests/$name was not built; check the KP_FUZZ part of the CMake files"
        targets+=("$name")
    done
    if [[ ${#targets[@]} -eq 0 ]]; then
        kp_log "no fuzz targets yet (tests/fuzz/fuzz_*.c); nothing to run"
        return
    fi

    # A crash leaves its input in $build_dir/fuzz-artifacts/<target>/ and the full
    # log in $build_dir/fuzz-logs/<target>.log. The repository's seed corpus is copied
    # into a scratch directory so that the run never modifies it.
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    local failed=() status runs
    fuzz_scratch=$(mktemp -d "${TMPDIR:-/tmp}/keyplan-fuzz.XXXXXX")
    trap 'rm -rf -- "$fuzz_scratch"' EXIT
    mkdir -p "$build_dir/fuzz-logs"

    for name in "${targets[@]}"; do
        kp_section "fuzz $name (${fuzz_seconds}s)"
        local corpus="$fuzz_scratch/$name" artifacts="$KP_ROOT/$build_dir/fuzz-artifacts/$name"
        local log="$build_dir/fuzz-logs/$name.log"
        local -a options=(-max_total_time="$fuzz_seconds" -timeout=10 -print_final_stats=1
                          -artifact_prefix="$artifacts/")
        rm -rf -- "$artifacts"
        mkdir -p "$corpus" "$artifacts"
        if [[ -d tests/fuzz/corpus/$name ]]; then
            cp -R "tests/fuzz/corpus/$name/." "$corpus/"
        fi
        if [[ -f tests/fuzz/$name.dict ]]; then
            options+=(-dict="tests/fuzz/$name.dict")
        fi

        status=0
        # The outer timeout only catches a fuzzer that ignores -max_total_time.
        timeout --kill-after=10 $((fuzz_seconds + 120)) \
            "$build_dir/tests/$name" "${options[@]}" "$corpus" >"$log" 2>&1 || status=$?
        if [[ $status -eq 0 ]]; then
            runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
            kp_log "$name: ok (${runs:-?} inputs in ${fuzz_seconds}s, corpus of $(find "$corpus" -type f | wc -l) inputs)"
        else
            # The sanitizer's report, from its first line (else the log's end).
            local first
            first=$(grep -n -m 1 -E '^==[0-9]+==|runtime error:|^ALARM:|ERROR: libFuzzer' "$log" | cut -d: -f1 || true)
            if [[ -n $first ]]; then
                sed -n "${first},$((first + 39))p" "$log" >&2
            else
                tail -n 40 "$log" >&2
            fi
            kp_log "$name: FAILED (exit status $status); full log: $log"
            kp_log "$name: crashing inputs are kept in $build_dir/fuzz-artifacts/$name/; replay one with: $build_dir/tests/$name FILE"
            failed+=("$name")
        fi
    done

    [[ ${#failed[@]} -eq 0 ]] || kp_die "fuzz targets failed: ${failed[*]}"
    kp_log "all ${#targets[@]} fuzz target(s) passed"
}

if [[ $mode == fuzz ]]; then
    run_fuzz
else
    run_tests
fi
