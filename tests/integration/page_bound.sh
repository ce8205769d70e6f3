# page_bound.sh — sourced by the database suites (dynamodb.sh, mongodb.sh, cassandra.sh):
# issue #14's rule on measured figures. verify prints, for the listings a page bounds,
# whether the items each page read stayed within an expert's bound (page x requests +
# requests + 1: kp_page_bound). On a bundled example every one must; test fixtures may
# model what no design serves in a page (a condition no key holds), and their warnings say so.

# expect_page_bound NAME MODEL REPORT — ok/bad (the suite's) for a bundled example's report
expect_page_bound() {
    local name=$1 model=$2 report=$3 line
    [[ $model == */examples/* ]] || return 0
    line=$(grep -m1 '^  page bound' "$report")
    if [[ -z $line ]]; then bad "$name: verify reported no page bound (every bundled example pages a listing)"
    elif [[ $line == *"; over:"* ]]; then bad "$name: a page read past an expert's bound:${line#*over:}"
    else ok "$name: every listing's measured pages within an expert's bound (${line#*: })"; fi
}
