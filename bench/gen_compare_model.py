#!/usr/bin/env python3
"""gen_compare_model.py N [PATTERNS_PER_ENTITY] [--rich] — writes a keyplan model with N entities
in a tree (each entity E<i> > 0 is the 1:N child of E<(i-1)//8>) and 5 access patterns
per entity by default (5,000 for 1,000 entities), plus one insert per entity, to stdout.

Patterns per entity: a get by key; a listing by a literal status (a set root); the
newest children under the parent (or, for the root entity, a second get); a short
summary by key; a feed of the newest rows. Deterministic: the same N gives the same
bytes. Used by bench/compare.sh.

--rich adds the shapes real models have and the plain tree lacks: a 1:1 relation between
neighbours, an N:M relation through a join entity every fifth entity, a copy of the
parent's name and a derived count of the first child relation, multi-hop ($each over
grandchildren), $one and $count responses, update, delete and two-step atomic writes, and
two workload mixes (reading, writing) with a screen group."""
import json
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rich = "--rich" in sys.argv[1:]
    n = int(args[0]) if len(args) > 0 else 1000
    per = int(args[1]) if len(args) > 1 else 5
    entities, relations, patterns, writes = {}, [], [], []
    for i in range(n):
        name = f"E{i}"
        attrs = {
            "id": {"type": "string", "size": 12},
            "name": {"type": "string", "size": 24},
            "status": {"type": "enum", "values": ["ACTIVE", "ARCHIVED"]},
            "createdAt": "timestamp",
        }
        if i > 0:
            attrs["parentId"] = {"type": "string", "size": 12}
        entities[name] = {"key": ["id"], "attributes": attrs}
        if i == 0:
            entities[name]["count"] = 1000  # the others derive from fan-out
        if i > 0:
            p = (i - 1) // 8
            relations.append({"name": f"e{i}s", "from": f"E{p}", "to": name, "cardinality": "1:N",
                              "on": {f"{name}.parentId": f"E{p}.id"}, "fanout": {"avg": 2, "max": 200},
                              "inverse": "parent"})
    for i in range(n):
        name, rows = f"E{i}", []
        rows.append({"name": f"get-e{i}", "rps": 50, "root": name, "where": {"id": "="},
                     "returns": {"id": f"{name}.id", "name": f"{name}.name", "status": f"{name}.status"}})
        rows.append({"name": f"active-e{i}", "rps": 5, "root": name, "where": {"status": {"=": "ACTIVE"}},
                     "returns": {"rows": {"$each": "$root", "$order": [{"createdAt": "desc"}], "$limit": 20,
                                          "id": f"{name}.id", "name": f"{name}.name"}}})
        if i > 0:
            p = (i - 1) // 8
            rows.append({"name": f"children-e{i}", "rps": 20, "root": f"E{p}", "where": {"id": "="},
                         "returns": {"id": f"E{p}.id", "children": {"$each": f"e{i}s", "$order": [{"createdAt": "desc"}],
                                                                      "$limit": 20, "id": f"{name}.id", "name": f"{name}.name"}}})
        else:
            rows.append({"name": f"name-e{i}", "rps": 20, "root": name, "where": {"id": "="},
                         "returns": {"name": f"{name}.name"}})
        rows.append({"name": f"summary-e{i}", "rps": 10, "root": name, "where": {"id": "="},
                     "returns": {"id": f"{name}.id", "createdAt": f"{name}.createdAt"}})
        rows.append({"name": f"feed-e{i}", "rps": 2, "root": name,
                     "returns": {"rows": {"$each": "$root", "$order": [{"createdAt": "desc"}], "$limit": 10,
                                          "id": f"{name}.id"}}})
        k = 0
        while len(rows) < per:
            rows.append(dict(rows[k % 5], name=f"{rows[k % 5]['name']}-{k}"))
            k += 1
        patterns.extend(rows[:per])
        writes.append({"name": f"create-e{i}", "rps": 1, "entity": name, "op": "insert"})
    workload = {"key_skew": 1.1}
    if rich:
        enrich(n, entities, relations, patterns, writes)
        reading = {p["name"]: p["rps"] * 4 for p in patterns[:50]}
        writing = {w["name"]: w["rps"] * 20 for w in writes[:50]}
        workload.update({"default_mix": "reading",
                         "mixes": {"reading": {"description": "read-heavy", "rates": reading},
                                   "writing": {"description": "write-heavy", "rates": writing}},
                         "groups": {"screen": [p["name"] for p in patterns[:3]]}})
    model = {"model": f"bench-{n}{'-rich' if rich else ''}", "entities": entities, "relations": relations,
             "access_patterns": patterns, "writes": writes, "workload": workload}
    json.dump(model, sys.stdout, indent=1)
    sys.stdout.write("\n")


def enrich(n, entities, relations, patterns, writes):
    """The --rich shapes, added to the plain tree in place."""
    for i in range(n):
        name = f"E{i}"
        attrs = entities[name]["attributes"]
        first_child = 8 * i + 1
        if i > 0:
            attrs["parentName"] = {"type": "string", "copy_of": "parent.name"}
        if first_child < n:
            attrs["childCount"] = {"type": "int", "derived": {"count": f"e{first_child}s"}}
        if i % 2 == 1 and i + 1 < n:
            # 1:1: each odd entity may point at its right neighbour
            attrs["pairId"] = {"type": "string", "size": 12, "optional": True}
            relations.append({"name": f"pair{i}", "from": f"E{i + 1}", "to": name, "cardinality": "1:1",
                              "on": {f"{name}.pairId": f"E{i + 1}.id"}, "inverse": f"pairOf{i}"})
        if i % 5 == 0 and i + 1 < n:
            join = f"J{i}"
            entities[join] = {"key": ["aId", "bId"], "attributes": {
                "aId": {"type": "string", "size": 12}, "bId": {"type": "string", "size": 12}, "since": "timestamp"}}
            relations.append({"name": f"links{i}", "from": name, "to": f"E{i + 1}", "cardinality": "N:M",
                              "through": {"entity": join, "from": "aId", "to": "bId"}, "inverse": f"linkedBy{i}",
                              "fanout": {"avg": 3, "max": 50}, "inverse_fanout": {"avg": 3, "max": 50}})
            patterns.append({"name": f"links-e{i}", "rps": 8, "root": name, "where": {"id": "="},
                             "returns": {"id": f"{name}.id", "links": {"$each": f"links{i}", "$order": [{"createdAt": "desc"}],
                                                                      "$limit": 10, "id": f"E{i + 1}.id", "name": f"E{i + 1}.name"}}})
        if i > 0:
            patterns.append({"name": f"with-parent-e{i}", "rps": 6, "root": name, "where": {"id": "="},
                             "returns": {"id": f"{name}.id", "parent": {"$one": "parent", "id": f"E{(i - 1) // 8}.id",
                                                                        "name": f"E{(i - 1) // 8}.name"}}})
        grandchild = 8 * first_child + 1
        if grandchild < n:
            patterns.append({"name": f"grandchildren-e{i}", "rps": 3, "root": name, "where": {"id": "="},
                             "returns": {"id": f"{name}.id",
                                         "count": {"$count": f"e{first_child}s"},
                                         "grandchildren": {"$each": f"e{first_child}s.e{grandchild}s",
                                                           "$order": [{"createdAt": "desc"}], "$limit": 10,
                                                           "id": f"E{grandchild}.id"}}})
        writes.append({"name": f"rename-e{i}", "rps": 2, "entity": name, "op": "update", "where": {"id": "="},
                       "set": ["name"]})
        writes.append({"name": f"remove-e{i}", "rps": 0.5, "entity": name, "op": "delete", "where": {"id": "="}})
        if i > 0:
            parent = f"E{(i - 1) // 8}"
            writes.append({"name": f"add-touch-e{i}", "rps": 1, "atomic": True, "steps": [
                {"entity": name, "op": "insert"},
                {"entity": parent, "op": "update", "where": {"id": f":{'parentId'}"}, "set": ["status"]}]})


if __name__ == "__main__":
    main()
