#!/usr/bin/env bash
#
# seed_shards.sh BUILD_DIR — `keyplan seed --shard I/N` on the real local servers (issue
# #16): N processes given the same model and data split one seed, with one marker protocol
# (migrations/seed.h, "Shards"). For each database:
#  - three shards started at once, the last first (it waits for shard 1 to set the target
#    up): every one exits 0, their items sent add up to the data set's items (nothing
#    written twice, nothing left out), one of them reads the whole target back and says
#    complete, and `keyplan verify` passes on what they wrote;
#  - a shard rerun on the complete target writes nothing;
#  - after a teardown, two shards: shard 1 alone completes its part (no read-back, exit 0);
#    a shard of another count (2/3) and shard 2 with --force are refused (exit 2) and write
#    nothing; shard 2 killed with SIGKILL while it writes (at 60 % of the time shard 1
#    took), then rerun: it finishes, reads back and marks the target complete, and verify
#    passes;
#  - after another teardown, shard 2 alone waits for shard 1 and gives up (exit 3) with
#    nothing written; and teardown left no shard marker behind (the next two shards write
#    every item again rather than trusting an old checkpoint).
# Prints one line per check and "N passed, N failed".
set -uo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../.." && pwd)
build=$(cd -- "${1:-$root/build}" && pwd)
keyplan=${KP_KEYPLAN:-$build/keyplan}
work=$(mktemp -d "${TMPDIR:-/tmp}/kp-it-shards.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["databases"][0]; v=d
for k in sys.argv[2].split("."): v=v.get(k) if isinstance(v, dict) else None
print(json.dumps(v))' "$1" "$2" 2>/dev/null; }

model=$root/examples/saas-control-plane/model.json scale=0.001
"$keyplan" generate "$model" --out "$work/data" --scale $scale --seed 21 --quiet || { bad "generate"; echo "0 passed, 1 failed"; exit 1; }

for db in dynamodb mongodb cassandra; do
    "$root/scripts/targets.sh" install "$db" >/dev/null && "$root/scripts/targets.sh" start "$db" >/dev/null ||
        { bad "$db: the server could not be installed or started"; continue; }
    url=$("$root/scripts/targets.sh" url "$db" | awk '{print $2}')
    prefix=sh$$_
    live=(--db "$db" --data "$work/data" --scale $scale --target "$db=$url" --prefix "$prefix")
    seed() { "$keyplan" seed "$model" "${live[@]}" --format json "$@"; }
    # a teardown that fails is named (the checks after it would fail for its reason)
    teardown() {
        "$keyplan" teardown "$model" --db "$db" --scale $scale --target "$db=$url" --prefix "$prefix" >"$work/$db.teardown.log" 2>&1 ||
            bad "$db: teardown: $(tail -3 "$work/$db.teardown.log")"
    }
    verify() { "$keyplan" verify "$model" "${live[@]}" --samples 20 --quiet >"$work/$db.verify.log" 2>&1; }
    teardown

    # ---- three shards at once, the last one first
    pids=()
    for i in 3 2 1; do
        seed --shard $i/3 >"$work/$db.s$i.json" 2>"$work/$db.s$i.err" & pids+=($!)
        [[ $i == 3 ]] && sleep 1
    done
    codes=()
    for p in "${pids[@]}"; do wait "$p"; codes+=($?); done
    if [[ ${codes[*]} == "0 0 0" ]]; then ok "$db: three shards exit 0"; else bad "$db: shard exits ${codes[*]}"; cat "$work/$db".s*.err; fi
    items=$(field "$work/$db.s1.json" items) sent=0 complete=0
    for i in 1 2 3; do
        sent=$((sent + $(field "$work/$db.s$i.json" items_sent)))
        [[ $(field "$work/$db.s$i.json" complete) == true ]] && complete=$((complete + 1))
    done
    if [[ $items -gt 0 && $sent == "$items" ]]; then ok "$db: the shards sent $sent items, the data set's $items"
    else bad "$db: the shards sent $sent items, the data set has $items"; fi
    if [[ $complete -ge 1 ]]; then ok "$db: $complete shard(s) read the whole target back and marked it complete"
    else bad "$db: no shard marked the target complete"; fi
    grep -q "waiting up to" "$work/$db.s3.err" && ok "$db: shard 3, started first, waited for shard 1" ||
        bad "$db: shard 3 did not wait for shard 1: $(cat "$work/$db.s3.err")"
    if verify; then ok "$db: verify passes on the sharded seed"; else bad "$db: verify"; tail -5 "$work/$db.verify.log"; fi
    seed --shard 2/3 >"$work/$db.again.json" 2>/dev/null
    [[ $? == 0 && $(field "$work/$db.again.json" items_sent) == 0 && $(field "$work/$db.again.json" action) == '"already-complete"' ]] &&
        ok "$db: a shard rerun on the complete target writes nothing" ||
        bad "$db: a shard rerun on the complete target: $(cat "$work/$db.again.json")"
    teardown

    # ---- two shards: refusals while the seed is in progress; one killed and rerun
    seed --shard 1/2 --batch 1 >"$work/$db.k1.json" 2>/dev/null
    [[ $? == 0 && $(field "$work/$db.k1.json" complete) == false && $(field "$work/$db.k1.json" shard.complete) == 1 ]] &&
        ok "$db: shard 1/2 alone completes its part and leaves the read-back to the last shard" ||
        bad "$db: shard 1/2 alone: $(cat "$work/$db.k1.json")"
    seed --shard 2/3 --shard-wait 1 >"$work/$db.n3.json" 2>"$work/$db.n3.err"
    [[ $? == 2 && $(field "$work/$db.n3.json" items_sent) == 0 ]] && grep -q "seeded in 2 shards" "$work/$db.n3.err" &&
        ok "$db: a shard of another count is refused (exit 2)" || bad "$db: shard 2/3 on a 2-shard seed: $(cat "$work/$db.n3.err")"
    seed --shard 2/2 --force >/dev/null 2>"$work/$db.force.err"
    [[ $? == 2 ]] && grep -q "belongs to shard 1" "$work/$db.force.err" && ok "$db: --force on shard 2 is refused (exit 2)" ||
        bad "$db: --force on shard 2: $(cat "$work/$db.force.err")"
    # killed at 60 % of the time shard 1's part took, one item a request like it
    at=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["databases"][0]["seconds"] * 600))' "$work/$db.k1.json")
    seed --shard 2/2 --batch 1 >/dev/null 2>&1 & victim=$!
    sleep "$(( at / 1000 )).$(printf '%03d' $(( at % 1000 )))"
    if kill -9 $victim 2>/dev/null; then killed="killed after ${at} ms"; else killed="finished before the kill at ${at} ms"; fi
    wait $victim 2>/dev/null
    seed --shard 2/2 >"$work/$db.k2.json" 2>"$work/$db.k2.err"
    [[ $? == 0 && $(field "$work/$db.k2.json" complete) == true ]] &&
        ok "$db: shard 2/2 $killed, rerun ($(field "$work/$db.k2.json" action), $(field "$work/$db.k2.json" items_resumed) items resumed): the target is complete" ||
        bad "$db: shard 2/2 rerun ($killed): $(cat "$work/$db.k2.json" "$work/$db.k2.err")"
    if verify; then ok "$db: verify passes after the killed shard's rerun"; else bad "$db: verify after the rerun"; tail -5 "$work/$db.verify.log"; fi
    teardown

    # ---- no shard 1: shard 2 gives up; no shard marker outlives teardown
    seed --shard 2/2 --shard-wait 1 >/dev/null 2>"$work/$db.alone.err"
    [[ $? == 3 ]] && grep -q "did not set the target up" "$work/$db.alone.err" && ok "$db: shard 2 without shard 1 gives up (exit 3)" ||
        bad "$db: shard 2 alone: $(cat "$work/$db.alone.err")"
    seed --shard 1/2 >"$work/$db.t1.json" 2>"$work/$db.t1.err" && seed --shard 2/2 >"$work/$db.t2.json" 2>"$work/$db.t2.err"
    t2=$(field "$work/$db.t2.json" items_sent)
    [[ $(field "$work/$db.t2.json" complete) == true && $t2 -gt 0 && $(field "$work/$db.t2.json" items_resumed) == 0 ]] &&
        ok "$db: after teardown, shard 2 wrote its $t2 items again (no old checkpoint left)" ||
        bad "$db: after teardown: shard 1: $(cat "$work/$db.t1.json" "$work/$db.t1.err" 2>&1 | tail -5); shard 2: $(cat "$work/$db.t2.json" "$work/$db.t2.err" 2>&1 | tail -5)"
    teardown
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
