#!/usr/bin/env bash
# Instruction counts of the claim bench's floor (benches/benches/claim/floor.rs):
# alkstore's claim+ack loop against the bare-driver loop, under callgrind, so a
# loaded machine does not move the figures. Callgrind dumps its counters on
# entering the marker functions around each loop (`floor_mark_start`,
# `floor_mark_end_<side>_<engine>`), so each loop's count covers every thread
# of the process while it ran (the tokio runtime's workers too), and nothing else.
# Client-side instructions only for Postgres: the server is another process
# (its wall-clock ratio is the bench's own output).
#
#   benches/callgrind_claim.sh            # both engines, 1000 ops per loop
#   ALKSTORE_FLOOR_OPS=500 benches/callgrind_claim.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
bin=$(cargo bench -p alkstore-benches --bench claim --no-run --message-format=json 2>/dev/null |
	python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "claim" and m.get("executable"):
        print(m["executable"])')
out=$(mktemp -d)
ops="${ALKSTORE_FLOOR_OPS:-1000}"
# One timed round (plus the untimed warm-up round) keeps the run short; a
# small backlog keeps the untimed refills short.
ALKSTORE_FLOOR_ONLY=1 ALKSTORE_FLOOR_ROUNDS="${ALKSTORE_FLOOR_ROUNDS:-1}" ALKSTORE_FLOOR_OPS="$ops" \
	ALKSTORE_FLOOR_BACKLOG="${ALKSTORE_FLOOR_BACKLOG:-$ops}" \
	valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" \
	--dump-before='*floor_mark_*' \
	"$bin" >"$out/run.txt" 2>"$out/valgrind.txt"
cat "$out/run.txt"
python3 - "$out" "$ops" "${ALKSTORE_FLOOR_ROUNDS:-1}" <<'PY'
import glob, re, sys
out, ops, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
totals = {}
dumps = sorted(glob.glob(f"{out}/cg.out.*"), key=lambda f: int(f.rsplit(".", 1)[1]))
for f in dumps:
    text = open(f, errors="replace").read()
    trig = re.search(r"^desc: Trigger: --dump-before=\S*?floor_mark_end_(\w+)", text, re.M)
    summ = re.search(r"^summary:\s*(\d+)", text, re.M)
    # Counters are zeroed at each dump, so the dump at an end marker holds
    # exactly the loop since its start marker.
    if trig and summ:
        totals[trig.group(1)] = totals.get(trig.group(1), 0) + int(summ.group(1))
pairs = ops * (rounds + 1)
for engine in ("sqlite", "postgres"):
    ours, bare = f"alkstore_{engine}", f"bare_{engine}"
    if ours in totals and bare in totals:
        a, b = totals[ours] / pairs, totals[bare] / pairs
        print(f"{engine:8} instructions per claim+ack (all threads): alkstore {a:,.0f}, bare {b:,.0f}, "
              f"bare/alkstore {b / a:.3f}")
    else:
        print(f"{engine}: no counts ({sorted(totals)})")
PY
echo "callgrind dumps: $out/cg.out.* (callgrind_annotate --inclusive=yes)"
