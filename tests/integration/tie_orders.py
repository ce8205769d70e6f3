#!/usr/bin/env python3
"""tie_orders.py DATA_DIR USERS GROUP — rewrites order-response sample data so that its
orders belong to the first USERS users only (the others are dropped) and each user's
orders, newest first, share their placedAt in runs of GROUP (the lines' copies follow):
a page of buy-again then often ends inside a run, which sends MongoDB's tie read."""
import collections
import json
import sys

data, users_kept, group = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def load(name):
    with open(f"{data}/{name}.ndjson") as f:
        return [json.loads(line) for line in f if line.strip()]


def save(name, rows):
    with open(f"{data}/{name}.ndjson", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


users = load("User")[:users_kept]
orders = load("Order")
by_user = collections.defaultdict(list)
for i, o in enumerate(orders):
    o["userId"] = users[i % len(users)]["userId"]
    by_user[o["userId"]].append(o)
placed = {}
for runs in by_user.values():
    runs.sort(key=lambda o: o["placedAt"], reverse=True)
    for i, o in enumerate(runs):
        o["placedAt"] = runs[i - i % group]["placedAt"]
        placed[o["orderId"]] = o["placedAt"]
lines = load("OrderItem")
for line in lines:
    line["placedAt"] = placed[line["orderId"]]
save("User", users)
save("Order", orders)
save("OrderItem", lines)
