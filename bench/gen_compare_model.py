#!/usr/bin/env python3
"""gen_compare_model.py N [PATTERNS_PER_ENTITY] — writes a keyplan model with N entities
in a tree (each entity E<i> > 0 is the 1:N child of E<(i-1)//8>) and 5 access patterns
per entity by default (5,000 for 1,000 entities), plus one insert per entity, to stdout.

Patterns per entity: a get by key; a listing by a literal status (a set root); the
newest children under the parent (or, for the root entity, a second get); a short
summary by key; a feed of the newest rows. Deterministic: the same N gives the same
bytes. Used by bench/compare.sh."""
import json
import sys


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 5
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
    model = {"model": f"bench-{n}", "entities": entities, "relations": relations,
             "access_patterns": patterns, "writes": writes, "workload": {"key_skew": 1.1}}
    json.dump(model, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
