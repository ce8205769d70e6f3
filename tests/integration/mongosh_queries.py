#!/usr/bin/env python3
"""mongosh_queries.py — the file reading behind tests/integration/mongosh.sh.

  declared SETUP_JS               the collections and indexes an emitted setup.mongosh.js
                                  declares, as JSON {"prefix": P, "collections": {NAME:
                                  [{"name", "key": [[field, dir], ...], "unique"}]}}
  compare SETUP_JS SERVER_JSON    every declared collection and index (name, key in order,
                                  unique) is on the server (SERVER_JSON: mongosh's
                                  [{name, indexes: getIndexes()}]); prints what is missing,
                                  exit 1 if anything is
  script MODEL EMIT_DIR DATA_DIR  a mongosh script that runs, per access pattern, the finds
                                  of EMIT_DIR/queries.md with their <placeholders> filled
                                  in, and prints one "KPQ {json}" line per pattern

Placeholders are filled like this, and nothing else is invented:
  <p> for an equality or begins_with on the pattern's root ("where"): the value of that
      attribute in the first record of DATA_DIR/<Root>.ndjson that has them all ("rel.attr"
      from the record related by 'rel'; a prefix for begins_with); a first find that
      takes only such values must return a document.
  <p> a declared parameter with a default (skip, pageSize, n): the default.
  <p> compared with $gt/$gte/$lt/$lte elsewhere: a bound that includes every document
      (1970-01-01 / 2100-01-01 for dates, <now> is the current time).
  <Entity.attr> in a later find: taken at run time from the documents the earlier find
      on that entity's collection returned ([<Entity.attr>, ...]: all of them).
  $or: <after the page token>: left out — the first page has no token.
A placeholder none of these fills makes the pattern "not runnable" with the reason,
which mongosh.sh reports as such instead of guessing a value.
"""
import json
import re
import sys

CREATE = re.compile(r'^create\(prefix \+ ("(?:[^"\\]|\\.)*"),\n', re.M)


def declared(setup_path):
    text = open(setup_path, encoding="utf-8").read()
    prefix = json.loads(re.search(r'^const prefix = ("(?:[^"\\]|\\.)*");', text, re.M).group(1))
    decoder = json.JSONDecoder()
    collections = {}
    for m in CREATE.finditer(text):
        name = prefix + json.loads(m.group(1))
        _schema, end = decoder.raw_decode(text, m.end())
        assert text[end:end + 2] == ",\n", f"unexpected text after the validator of {name}"
        indexes, _ = decoder.raw_decode(text, end + 2)
        collections[name] = [{"name": i["name"], "key": [[k, v] for k, v in i["key"].items()],
                              "unique": bool(i.get("unique"))} for i in indexes]
    return {"prefix": prefix, "collections": collections}


def compare(setup_path, server_path):
    want = declared(setup_path)["collections"]
    have = {c["name"]: {i["name"]: i for i in c["indexes"]} for c in json.load(open(server_path))}
    problems = []
    for name, indexes in want.items():
        if name not in have:
            problems.append(f"collection {name} is missing")
            continue
        for index in indexes:
            got = have[name].get(index["name"])
            if got is None:
                problems.append(f"index {name}.{index['name']} is missing")
            elif [[k, v] for k, v in got["key"].items()] != index["key"]:
                problems.append(f"index {name}.{index['name']} has key {got['key']}, not {index['key']}")
            elif bool(got.get("unique")) != index["unique"]:
                problems.append(f"index {name}.{index['name']} unique={bool(got.get('unique'))}, declared {index['unique']}")
    for p in problems:
        print("    " + p)
    print(f"{len(want)} collections, {sum(len(i) for i in want.values())} indexes declared")
    return 1 if problems else 0


# ---- queries ---------------------------------------------------------------------------

def sections(queries_md):
    """{pattern: [command, ...]} from the ```js blocks of queries.md, in order."""
    out, name, inside = {}, None, False
    for line in open(queries_md, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.startswith("## "):
            name = line[3:].strip()
            out[name] = []
        elif line.startswith("```js"):
            inside = True
        elif line.startswith("```"):
            inside = False
        elif inside and name and line.strip():
            command = re.sub(r"\)\s+//.*$", ")", line.strip())
            out[name].append(command)
    return out


def records(data_dir, entity):
    try:
        with open(f"{data_dir}/{entity}.ndjson", encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def at_path(record, path):
    for part in path.split("."):
        if not isinstance(record, dict) or part not in record:
            return None
        record = record[part]
    return record


def root_record(model, data_dir, root, keys):
    """The first record of the root entity that has a value for every key, as a dict
    key -> value. A key "rel.attr" naming a 1:1/1:N relation of the root (the way an
    embedded entity is addressed) is read from the first related record."""
    related = {}
    for rel in model.get("relations", []):
        if rel.get("from") == root and len(rel.get("on", {})) == 1:
            (to_side, from_side), = rel["on"].items()
            related[rel["name"]] = (rel["to"], to_side.split(".", 1)[1], from_side.split(".", 1)[1])
    index = {}
    for record in records(data_dir, root):
        values = {}
        for key in keys:
            value = at_path(record, key)
            head, _, rest = key.partition(".")
            if value is None and rest and head in related:
                entity, fk, pk = related[head]
                if entity not in index:
                    index[entity] = {}
                    for r in records(data_dir, entity):
                        index[entity].setdefault(r.get(fk), r)
                value = at_path(index[entity].get(record.get(pk)), rest)
            if value is None:
                break
            values[key] = value
        else:
            return values
    return None


def attribute_type(model, entity, path):
    attrs = model["entities"].get(entity, {}).get("attributes", {})
    spec = None
    for part in path.split("."):
        spec = attrs.get(part)
        if isinstance(spec, dict):
            attrs = spec.get("fields", {})
    return spec if isinstance(spec, str) else (spec or {}).get("type")


def schema_type(emit_dir, collection, field):
    try:
        schema = json.load(open(f"{emit_dir}/schemas/{collection}.json", encoding="utf-8"))
    except (OSError, ValueError):
        return None
    node = schema
    for part in field.split("."):
        node = node.get("properties", {}).get(part)
        if node is None:
            return None
    kind = node.get("bsonType")
    return kind[0] if isinstance(kind, list) else kind


def js_value(value, kind):
    if kind == "timestamp" and isinstance(value, str):  # a model 'date' stays a string
        return f"new Date({json.dumps(value)})"
    return json.dumps(value)


def fill(command, pattern, model, emit_dir, data_dir, prefix):
    """The command with every <parameter> filled in, or raise ValueError(reason).
    Returns (js, expect_documents)."""
    root = pattern["root"]
    where = pattern.get("where") or {}
    params = pattern.get("params") or {}
    collection = re.match(r'db\.getCollection\(("(?:[^"\\]|\\.)*")\)', command)
    collection = json.loads(collection.group(1)) if collection else ""
    record = root_record(model, data_dir, root, [k for k in where if not isinstance(where[k], dict)
                                                 or any(isinstance(a, str) and a.startswith(":") for a in where[k].values())])
    expect = True

    command = re.sub(r",\s*\$or: <after the page token>", "", command)
    command = re.sub(r"\{\s*\$or: <after the page token>\s*\}", "{}", command)

    def root_param(name):
        """(where key, operator) of the root condition that takes :name or '='."""
        for key, cond in where.items():
            if cond == "=" and (key == name or key.endswith("." + name)):
                return key, "="
            if isinstance(cond, dict):
                for op, arg in cond.items():
                    if arg == ":" + name:
                        return key, op
        return None, None

    def replace(m, in_string=False):
        nonlocal expect
        name = m.group(1)
        key, op = root_param(name)
        if key is not None:
            if record is None:
                raise ValueError(f"no {root} record in the data has every attribute the pattern selects by")
            value = record[key]
            if op == "begins_with":
                value = re.sub(r"[^A-Za-z0-9]", "", str(value))[:2]  # nothing a regex would read as syntax
            elif op != "=":
                expect = False
            if in_string:
                if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9 _-]*", value):
                    raise ValueError(f"<{name}> inside a string literal needs plain text, not {value!r}")
                return value
            return js_value(value, attribute_type(model, root, key))
        if name in params and "default" in params[name]:
            return json.dumps(params[name]["default"])
        compared = re.search(r'([\w.]+|"[^"]+"): \{[^{}]*\$(gte|gt|lte|lt): <' + re.escape(name) + ">", command)
        if compared:
            expect = False
            field = compared.group(1).strip('"')
            kind = schema_type(emit_dir, collection, field)
            lower = compared.group(2) in ("gt", "gte")
            if name == "now":
                return "new Date()"
            if kind == "date":
                return 'new Date("1970-01-01T00:00:00Z")' if lower else 'new Date("2100-01-01T00:00:00Z")'
            if kind in ("int", "long", "double", "decimal"):
                return "-1e18" if lower else "1e18"
            raise ValueError(f"<{name}> is compared with {field} of type {kind}: no bound to choose")
        raise ValueError(f"no value for <{name}>: it is neither a condition of the root nor a parameter with a default")

    # a placeholder inside a string literal ("^<prefix>") gets the plain text
    command = re.sub(r'"(?:[^"\\]|\\.)*"',
                     lambda m: re.sub(r"<(\w+)>", lambda p: replace(p, in_string=True), m.group(0)), command)
    command = re.sub(r"\[<(\w+)\.([\w.]+)>, \.\.\.\]", lambda m: f"kpAll({json.dumps(m.group(1))}, {json.dumps(m.group(2))})", command)
    command = re.sub(r"<(\w+)\.([\w.]+)>", lambda m: f"kpFirst({json.dumps(m.group(1))}, {json.dumps(m.group(2))})", command)
    command = re.sub(r"<(\w+)>", replace, command)
    if "<" in re.sub(r'"(?:[^"\\]|\\.)*"', "", command):
        raise ValueError(f"a placeholder is left in {command}")
    return command, collection[len(prefix):], expect


RUNTIME = r"""
function kpFirst(entity, path) {
  const docs = kpDocs[entity];
  if (!docs || !docs.length) throw { kpSkip: "no " + entity + " document from an earlier find" };
  return path.split(".").reduce((v, k) => v == null ? v : v[k], docs[0]);
}
function kpAll(entity, path) {
  const docs = kpDocs[entity];
  if (!docs || !docs.length) throw { kpSkip: "no " + entity + " document from an earlier find" };
  return [].concat(...docs.map(d => path.split(".").reduce((v, k) => v == null ? v : v[k], d)));
}
let kpDocs = {};
function kpRun(pattern, steps) {
  kpDocs = {};
  const out = { pattern: pattern, steps: [] };
  for (const s of steps) {
    try {
      const r = s.run();
      if (Array.isArray(r)) { kpDocs[s.entity] = r; out.steps.push({ command: s.text, documents: r.length, expect: s.expect }); }
      else out.steps.push({ command: s.text, count: r });
    } catch (e) {
      if (e && e.kpSkip) { out.steps.push({ command: s.text, skipped: e.kpSkip }); break; }
      out.steps.push({ command: s.text, error: String(e && e.message || e) });
      break;
    }
  }
  print("KPQ " + JSON.stringify(out));
}
"""


def script(model_path, emit_dir, data_dir):
    model = json.load(open(model_path, encoding="utf-8"))
    prefix = declared(f"{emit_dir}/setup.mongosh.js")["prefix"]
    patterns = {p["name"]: p for p in model["access_patterns"]}
    out = [RUNTIME]
    for name, commands in sections(f"{emit_dir}/queries.md").items():
        if name not in patterns:
            continue
        steps = []
        try:
            for i, command in enumerate(commands):
                js, entity, expect = fill(command, patterns[name], model, emit_dir, data_dir, prefix)
                run = js + (".toArray()" if ".find(" in js else "")
                steps.append(f"  {{ text: {json.dumps(command)}, entity: {json.dumps(entity)}, "
                             f"expect: {json.dumps(expect and i == 0)}, run: () => {run} }}")
        except ValueError as e:
            out.append(f"print('KPQ ' + JSON.stringify({{ pattern: {json.dumps(name)}, "
                       f"not_runnable: {json.dumps(str(e))} }}));")
            continue
        out.append(f"kpRun({json.dumps(name)}, [\n" + ",\n".join(steps) + "\n]);")
    print("\n".join(out))
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "declared":
        print(json.dumps(declared(argv[2])))
        return 0
    if len(argv) == 4 and argv[1] == "compare":
        return compare(argv[2], argv[3])
    if len(argv) == 5 and argv[1] == "script":
        return script(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
