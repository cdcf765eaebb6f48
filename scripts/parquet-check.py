#!/usr/bin/env python3
"""Reads a run's requests.parquet with pyarrow and DuckDB (whichever are installed; at least
one must be) and checks it against the requests.jsonl beside it: the same number of rows, and
the same stage, timings, tokens, status and error kind in each, in order.

    pip install pyarrow duckdb
    python3 scripts/parquet-check.py results/RUN      # a run's directory

Exit 0 when every reader agrees with requests.jsonl, 1 otherwise, 2 when neither is installed.
Not part of `cargo test`: the tests read the file with the parquet crate's reader; this is a
second opinion from the readers notebooks use.
"""

import json
import sys
from pathlib import Path

COMPARED = [
    "stage", "index", "turn", "scheduled_ns", "sent_ns", "first_token_ns", "done_ns",
    "ttft_ms", "e2e_ms", "input_tokens", "output_tokens", "status", "error",
]


def expected(run):
    rows = []
    with open(run / "requests.jsonl", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                rows.append({c: row.get(c) for c in COMPARED})
    return rows


def with_pyarrow(path):
    import pyarrow.parquet as pq
    table = pq.read_table(path)
    return [{c: r[c] for c in COMPARED} for r in table.to_pylist()]


def with_duckdb(path):
    import duckdb
    cols = ", ".join(f'"{c}"' for c in COMPARED)
    cur = duckdb.connect().execute(f"select {cols} from read_parquet(?)", [str(path)])
    return [dict(zip(COMPARED, r)) for r in cur.fetchall()]


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    run = Path(sys.argv[1])
    want = expected(run)
    readers = []
    try:
        import pyarrow.parquet  # noqa: F401
        readers.append(("pyarrow", with_pyarrow))
    except ImportError:
        pass
    try:
        import duckdb  # noqa: F401
        readers.append(("duckdb", with_duckdb))
    except ImportError:
        pass
    if not readers:
        print("neither pyarrow nor duckdb is installed", file=sys.stderr)
        return 2
    ok = True
    for name, read in readers:
        got = read(run / "requests.parquet")
        if got == want:
            print(f"{name}: {len(got)} rows, equal to requests.jsonl")
            continue
        ok = False
        print(f"{name}: {len(got)} rows, requests.jsonl {len(want)}", file=sys.stderr)
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                print(f"  row {i}: parquet {g}\n         jsonl   {w}", file=sys.stderr)
                break
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
