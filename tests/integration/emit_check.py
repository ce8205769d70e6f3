#!/usr/bin/env python3
"""emit_check.py — helpers for tests/integration/emit_tools.sh: reading the files
`keyplan emit` wrote and the AWS CLI's answers. Each subcommand prints what it checked
and exits non-zero (with the reason on stderr) when a check fails.

  emit_check.py schema SCHEMA MODEL.json...      validate Workbench models (python-jsonschema)
  emit_check.py indexes CREATE.json DESCRIBE.json  describe-table shows the table create-table.json asked for
  emit_check.py items WORKBENCH.json OUT_DIR      batch-write-item request files (25 puts each) of the
                                                 sample items (TableData); prints how many items
  emit_check.py fill REQUEST.json WORKBENCH.json OUT.json
                                                 replace the placeholders: a value a sample item holds
                                                 where one fits, else a dummy of the right type
  emit_check.py command REQUEST.json             the AWS CLI command that sends it (query, get-item, ...)
  emit_check.py answer ANSWER.json MIN_COUNT [ENTITY]
                                                 a query answer has at least MIN_COUNT items (and one of ENTITY)
  emit_check.py match TRACE REQUESTS_DIR          every Query in a KP_TRACE_REQUESTS trace of `keyplan verify`
                                                 is one of the request files, placeholders aside
"""
import json
import re
import sys

PLACEHOLDER = re.compile(r'<([^<>"]+)>')


def fail(message):
    print(f"emit_check.py: error: {message}", file=sys.stderr)
    sys.exit(1)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def cmd_schema(schema_path, *models):
    import jsonschema  # installed into the tools venv by emit_tools.sh
    from importlib.metadata import version

    schema = load(schema_path)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    for path in models:
        errors = sorted(validator.iter_errors(load(path)), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            fail(f"{path}: {'/'.join(str(p) for p in e.path)}: {e.message}")
        print(f"ok   {path} validates against {schema_path} (jsonschema {version('jsonschema')})")


def index_shapes(indexes):
    return sorted((i["IndexName"], tuple((k["AttributeName"], k["KeyType"]) for k in i["KeySchema"]),
                   i["Projection"]["ProjectionType"]) for i in indexes or [])


def cmd_indexes(create_path, describe_path):
    want = load(create_path)
    got = load(describe_path)["Table"]
    if got["TableName"] != want["TableName"]:
        fail(f"describe-table names {got['TableName']}, create-table.json {want['TableName']}")
    if got.get("TableStatus") != "ACTIVE":
        fail(f"{got['TableName']} is {got.get('TableStatus')}, not ACTIVE")
    if [(k["AttributeName"], k["KeyType"]) for k in got["KeySchema"]] != \
       [(k["AttributeName"], k["KeyType"]) for k in want["KeySchema"]]:
        fail(f"{got['TableName']}: key schema {got['KeySchema']} is not {want['KeySchema']}")
    for kind in ("LocalSecondaryIndexes", "GlobalSecondaryIndexes"):
        if index_shapes(got.get(kind)) != index_shapes(want.get(kind)):
            fail(f"{got['TableName']}: {kind} {index_shapes(got.get(kind))} is not {index_shapes(want.get(kind))}")
    names = [i["IndexName"] for k in ("LocalSecondaryIndexes", "GlobalSecondaryIndexes") for i in want.get(k, [])]
    billing = got.get("BillingModeSummary", {}).get("BillingMode", "?")
    print(f"ok   {got['TableName']}: ACTIVE, key {'/'.join(k['AttributeName'] for k in got['KeySchema'])}, "
          f"indexes {' '.join(names) or '(none)'}, billing {billing}")


def cmd_items(workbench_path, out_dir):
    model = load(workbench_path)
    table = model["DataModel"][0]
    items = table["TableData"]
    for n in range(0, len(items), 25):
        puts = [{"PutRequest": {"Item": item}} for item in items[n:n + 25]]
        with open(f"{out_dir}/batch-{n // 25:04d}.json", "w", encoding="utf-8") as f:
            json.dump({"RequestItems": {table["TableName"]: puts}}, f)
    print(len(items))


def sample_values(model):
    """(entity, attribute) -> [AttributeValue] and attribute -> [string values], from the sample items."""
    by_entity, by_attr = {}, {}
    for item in model["DataModel"][0]["TableData"]:
        entity = item.get("_et", {}).get("S", "")
        for name, av in item.items():
            by_entity.setdefault((entity, name), []).append(av)
            if "S" in av:
                by_attr.setdefault(name, []).append(av["S"])
    return by_entity, by_attr


def key_attribute_of(request):
    """ExpressionAttributeValues name -> the attribute a key condition compares it with."""
    names = request.get("ExpressionAttributeNames", {})
    out = {}
    for name, value in re.findall(r"(#n\d+) = (:v\d+)", request.get("KeyConditionExpression", "")):
        out[value] = names.get(name)
    return out


def bind_from(template, candidates, bound):
    """Binds the placeholders of template from the first candidate string it matches."""
    parts = PLACEHOLDER.split(template)
    pattern = "".join("(.+?)" if i % 2 else re.escape(p) for i, p in enumerate(parts)) + "$"
    holders = parts[1::2]
    for c in candidates:
        m = re.match(pattern, c)
        if m:
            for h, v in zip(holders, m.groups()):
                bound.setdefault(h, v)
            return True
    return False


def dummy(tag):
    return {"N": "0", "BOOL": True, "B": "AA==", "M": {}, "L": []}.get(tag, "x")


def cmd_fill(request_path, workbench_path, out_path):
    request = load(request_path)
    by_entity, by_attr = sample_values(load(workbench_path))
    bound = {}
    # 1. key values compared with a key attribute: a sample item's value of that attribute
    compared = key_attribute_of(request)
    for value_name, av in request.get("ExpressionAttributeValues", {}).items():
        (tag, text), = av.items()
        if tag == "S" and PLACEHOLDER.search(text) and compared.get(value_name):
            bind_from(text, by_attr.get(compared[value_name], []), bound)
    for key in [request.get("Key")] + list(request.get("RequestItems", {}).values()):
        keys = key.get("Keys", []) if key and "Keys" in key else [key] if key else []
        for k in keys:
            for attr, av in k.items():
                if "S" in av and PLACEHOLDER.search(av["S"]):
                    bind_from(av["S"], by_attr.get(attr, []), bound)
    # 2. <Entity.attribute>: that attribute of a sample item of that entity
    text = json.dumps(request)
    for holder in PLACEHOLDER.findall(text):
        if "." in holder and holder not in bound:
            entity, attr = holder.split(".", 1)
            attr = attr.replace("[i]", "")
            for av in by_entity.get((entity, attr), []):
                (tag, v), = av.items()
                if tag == "L" and v:
                    (tag, v), = v[0].items()
                if isinstance(v, (str, int, float)):
                    bound[holder] = str(v)
                    break
    bound.setdefault("shard", "0")
    # 3. continuation placeholders: a first page instead
    if request.get("ExclusiveStartKey") == "<LastEvaluatedKey>":
        del request["ExclusiveStartKey"]

    def fill_value(av):
        (tag, v), = av.items()
        if isinstance(v, str) and PLACEHOLDER.search(v):
            whole = PLACEHOLDER.fullmatch(v)
            if whole and whole.group(1) not in bound and tag != "S":
                return {tag: dummy(tag)}
            return {tag: PLACEHOLDER.sub(lambda m: bound.get(m.group(1), "x"), v)}
        return av

    def walk(node):
        if isinstance(node, dict):
            if len(node) == 1 and next(iter(node)) in ("S", "N", "B", "BOOL", "M", "L"):
                return fill_value(node)
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    filled = walk(request)
    left = PLACEHOLDER.findall(json.dumps(filled))
    if left:
        fail(f"{request_path}: placeholders left after filling: {left}")
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(filled, f)
    print(", ".join(f"<{k}>={v}" for k, v in sorted(bound.items()) if f"<{k}>" in text) or "no placeholders")


def cmd_answer(answer_path, min_count, entity=None):
    answer = load(answer_path)
    items = answer.get("Items", [])
    count = answer.get("Count", len(items))
    if count < int(min_count):
        fail(f"{answer_path}: {count} items, expected at least {min_count}")
    if entity and not any(i.get("_et", {}).get("S") == entity for i in items):
        fail(f"{answer_path}: no {entity} item among the {count} returned")
    print(count)


def cmd_command(request_path):
    request = load(request_path)
    if "KeyConditionExpression" in request:
        print("query")
    elif "Key" in request:
        print("get-item")
    elif "RequestItems" in request:
        print("batch-get-item")
    elif "FilterExpression" in request:
        print("scan")
    else:
        fail(f"{request_path}: not a Query, GetItem, BatchGetItem or Scan request")


def template_regex(text):
    parts = PLACEHOLDER.split(text)
    return "^" + "".join(".*?" if i % 2 else re.escape(p) for i, p in enumerate(parts)) + "$"


def matches(template, sent):
    if template.get("TableName") != sent.get("TableName"):
        return False
    for key in ("IndexName", "KeyConditionExpression", "FilterExpression", "ExpressionAttributeNames",
                "ScanIndexForward", "Select"):
        if template.get(key) != sent.get(key):
            return False
    want, got = template.get("ExpressionAttributeValues", {}), sent.get("ExpressionAttributeValues", {})
    if set(want) != set(got):
        return False
    for name, av in want.items():
        (tag, text), = av.items()
        (got_tag, got_text), = got[name].items()
        if tag != got_tag or not re.match(template_regex(str(text)), str(got_text), re.S):
            return False
    # not compared: Limit (a limit parameter's value replaces the default the file holds)
    # and ExclusiveStartKey (the previous answer's continuation)
    return True


def cmd_match(trace_path, requests_dir):
    import glob
    import os
    templates = {}
    for path in glob.glob(os.path.join(requests_dir, "*.json")):
        t = load(path)
        if "KeyConditionExpression" in t:
            templates[os.path.basename(path)] = t
    sent = 0
    used = set()
    with open(trace_path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("Query "):
                continue
            request = json.loads(line[len("Query "):])
            sent += 1
            hits = [name for name, t in templates.items() if matches(t, request)]
            if not hits:
                fail(f"keyplan sent a Query no request file describes: {line.strip()[:600]}")
            used.update(hits)
    if sent == 0:
        fail(f"{trace_path} holds no Query: was KP_TRACE_REQUESTS set?")
    print(f"{sent} Query requests, each one of the {len(templates)} Query files ({len(used)} of them seen)")


def main(argv):
    commands = {"schema": cmd_schema, "indexes": cmd_indexes, "items": cmd_items, "fill": cmd_fill, "answer": cmd_answer,
                "command": cmd_command, "match": cmd_match}
    if len(argv) < 2 or argv[1] not in commands:
        print(__doc__, file=sys.stderr)
        return 2
    commands[argv[1]](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
