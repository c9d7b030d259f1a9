#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, fuzz/corpus/<target>/, from committed files (results, test data,
shipped profiles, traces) and a few hand-written inputs. Run it again after changing what it picks; the
seeds are committed, so CI needs no python for them. Seeds are kept small (a few KB each, a few hundred KB
in all): libFuzzer's inputs grow no longer than its largest seed, and short inputs mutate fast.

    fuzz/make_corpus.py
"""

from __future__ import annotations

import gzip
import json
import lzma
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fuzz" / "corpus"


def lines(path: str, count: int) -> bytes:
    """The first `count` lines of a text file (plain, xz, or gzip even where it is cut short)."""
    raw = whole(path)
    if path.endswith(".gz"):
        raw = zlib.decompressobj(wbits=31).decompress(raw)  # what a truncated gzip still gives
    return b"".join(raw.splitlines(keepends=True)[:count])


def whole(path: str) -> bytes:
    """A committed file's bytes; a record committed xz-compressed (NAME.xz), decompressed."""
    raw = (ROOT / path).read_bytes()
    return lzma.decompress(raw) if path.endswith(".xz") else raw


RESULTS = {
    "document.json": whole("tests/data/compare/base.json"),
    # compressed as committed results are (.xz, .gz): read_results_file decompresses them first
    "document.json.xz": lzma.compress(whole("tests/data/compare/base.json")),
    "document.json.gz": gzip.compress(whole("tests/data/compare/base.json"), mtime=0),
    "verdict-fail.json": whole("tests/data/compare/verdict-fail.json"),
    "unknown-schema.json": whole("tests/data/compare/unknown-schema.json"),
    "stream.jsonl": whole("tests/data/compare/base.jsonl"),
    "gbench.json": whole("tests/data/compare/gbench-base.json"),
    # an H200 replay document (cnn_train through caching), kept as made: its record is in results/'s history
    "replay-document.json": whole("fuzz/corpus/results/replay-document.json"),
    # a real H100 stream: its header, one row and its footer; and the same cut short while writing a row
    "h100-stream.jsonl": lines("results/h100/compare/base-h100-580.159.04.jsonl.xz", 2)
    + whole("results/h100/compare/base-h100-580.159.04.jsonl.xz").splitlines(keepends=True)[-1],
    "h100-stream-cut.jsonl": lines("results/h100/compare/base-h100-580.159.04.jsonl.xz", 2)
    + whole("results/h100/compare/base-h100-580.159.04.jsonl.xz").splitlines(keepends=True)[2][:400],
    # four ranks, aborted by a hung NCCL call
    "h200x4-aborted.jsonl": lines("results/h200x4/fault-nccl-hang-h200x4-580.159.04.jsonl.xz", 3),
    "nan.json": b'{"benchmarks": [{"name": "a/1", "run_type": "iteration", "real_time": NaN, '
    b'"cpu_time": -Infinity, "time_unit": "ns", "bytes_per_second": 1e9}]}',
}

JSON = {
    **RESULTS,
    "schema-rows.json": whole("results/schema/memstress-rows-1.schema.json"),
    "devices.json": whole("results/h100/devices-h100-580.159.04.json"),
    "scalars.json": b'[0, -1, 1.5e300, 18446744073709551615, -9223372036854775808, "\\u00e9\\ud83d\\ude00", '
    b"true, null, {}]",
}

PROFILE = {
    "h100.yaml": whole("profiles/h100.yaml"),
    "h200.yaml": whole("profiles/h200.yaml"),
    **{p.name: p.read_bytes() for p in sorted((ROOT / "tests" / "data" / "accept").glob("*.yaml"))},
}

TRACES = ["cnn_train", "kv_cache_infer", "multistream_loader", "transformer_train"]
REPLAY_TRACE = {
    "two_devices.trace.csv": whole("tests/data/replay/two_devices.trace.csv"),
    "truncated.trace.csv": lines("tests/data/replay/truncated.trace.csv.gz", 30),
    **{f"{t}.trace.csv": lines(f"results/traces/torch-2.11-h100/{t}.trace.csv.gz", 40) for t in TRACES},
    "skipped-action.trace.csv": b"# memstress-trace v1\nseq,time_ns,action,id,bytes,stream,device,extra\r\n"
    b"# a comment\n1,5,alloc,7,512,0,cuda:1,x\r\n2,6,segment_map,,2097152,0,cuda:1,\n"
    b"3,7,future_action,9,1,0,cuda:1,\n4,8,oom,,1073741824,3,cuda:1,\n5,9,free,7,512,0,cuda:1,\n",
}

ALLOC_CONF = {
    "pytorch.txt": b"max_split_size_mb:128, garbage_collection_threshold:0.8,expandable_segments:True,"
    b"roundup_power2_divisions:4,per_process_memory_fraction:0.5,release_lock_on_cudamalloc:True",
    "divisions.txt": b"roundup_power2_divisions:[256:1,512:2,>:8]",
    "divisions-first.txt": b"roundup_power2_divisions:[>:4],max_non_split_rounding_mb:64",
    "memstress.txt": b"release_threshold_mb:1024,per_process_memory_fraction:1,expandable_segments:false",
    "pinned.txt": b"pinned_num_register_threads:8,pinned_use_cuda_host_register:True,backend:native",
    "empty.txt": b"",
}

BYTES = {f"{i}.txt": s.encode() for i, s in enumerate(
    ["512", "64K", "1M", "1.5G", "80GiB", "40GB", "8T", "100B", "1536KiB", "0", "18446744073709551615",
     "0.5MB", "2TB", "3mib", ".5k"])}

PARAMS = {
    "default.txt": b"",
    "overrides.txt": b"-p bytes=64M,1G\n-p alloc-smoke.count=1,2,4\n",
    "sweep.txt": b"+alloc-smoke\n+transfers\n-b 1M\n-e 1G\n-f 4\n",
    "increment.txt": b"+alloc-smoke\n-b 4K\n-e 64K\n-i 4K\n",
    "full.txt": b"--full\n-p transfers.direction=h2d,d2d\n-p host=pinned,pageable\n~transfers\n",
    "nccl_memory.txt": b"+nccl_memory\n-p channels=0,64\n-p cycles=0,1e3\n~nccl_memory\n",
    "signed.txt": b"+signed\n-p warm=-5,5\n",
    "integrity.txt": b"+integrity\n-p fraction=0.5\n-p patterns=a,b\n-p block=1G,2G\n",
    "engine.txt": b"+transfers\n-p engine=sm\n-p host=pageable,registered\n-p streams=1,32,33\n",
}

# The file reader's seeds: the same traces, plus gzip streams (whole, and cut short) that it must decompress
# as it reads.
_gzip = zlib.compressobj(9, zlib.DEFLATED, 31)
_TRACE_GZ = _gzip.compress(REPLAY_TRACE["two_devices.trace.csv"]) + _gzip.flush()
TRACE_FILE = {**REPLAY_TRACE, "two_devices.trace.csv.gz": _TRACE_GZ,
              "cut-short.trace.csv.gz": _TRACE_GZ[: len(_TRACE_GZ) // 2]}

def snapshot_facts() -> dict[str, bytes]:
    """The converter's facts of the committed doctor snapshots (with and without frames, with an OOM, with a
    leak), each cut to a few sites and allocations so the seeds stay small."""
    out: dict[str, bytes] = {}
    snapshots = ROOT / "results" / "h100" / "doctor-580.159.04" / "snapshots"
    with tempfile.TemporaryDirectory() as tmp:
        for snap in sorted(snapshots.glob("*.snapshot.pickle.gz")):
            name = snap.name.removesuffix(".snapshot.pickle.gz")
            facts = Path(tmp) / f"{name}.facts.json"
            subprocess.run([sys.executable, "-m", "memstress.convert", str(snap), "-o", str(Path(tmp) / f"{name}.trace.csv.gz"),
                            "--facts", str(facts), "--quiet"], check=True, cwd=ROOT / "python")
            doc = json.loads(facts.read_text())
            doc["sites"] = doc["sites"][:4]
            for site in doc["sites"]:
                site["stack"] = site["stack"][:2]
            doc["alloc_sites"] = [min(s, len(doc["sites"]) - 1) for s in doc["alloc_sites"][:24]]
            doc["segment_addresses"] = doc.get("segment_addresses", [])[:4]
            doc["ooms"] = [{**o, "site": min(o["site"], len(doc["sites"]) - 1)} for o in doc["ooms"][:2]]
            out[f"{name}.facts.json"] = json.dumps(doc, indent=1).encode()
    return out


# The store's ingest reads what the results loader accepts: the same seeds, and a fleet node's document
# (tests/data/fleet: 4 GPUs with UUIDs and bus ids, which the store keys its GPUs by).
INGEST = {**RESULTS, "fleet-node.json": whole("tests/data/fleet/node01.json")}

def store_file(*inserts: str) -> bytes:
    """An SQLite store as memstress makes it (harness/db/schema.cpp's migration, read from the source) with
    `inserts` run in it, in 512-byte pages so that the seed stays a few KB."""
    import re
    import sqlite3

    source = (ROOT / "harness/db/schema.cpp").read_text()
    schema = re.search(r'kV1 = R"sql\((.*?)\)sql"', source, re.S).group(1)
    schema = schema.replace("{id}", "INTEGER PRIMARY KEY").replace("{real}", "REAL").replace("{int}", "INTEGER")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "store.sqlite"
        c = sqlite3.connect(path)
        c.execute("PRAGMA page_size = 512")
        c.executescript("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);"
                        "INSERT INTO schema_version VALUES (1, '2026-11-21T14:03:05Z');" + schema)
        for sql in inserts:
            c.execute(sql)
        c.commit()
        c.execute("VACUUM")
        c.close()
        return path.read_bytes()


# The store's reader: the first line a schema version (as text), the rest a store file.
STORE = {
    "version-current": b"1\n" + store_file(),
    "version-2-31": b"2147483648\n",
    "version-huge": b"999999999999\n",
    "version-zero": b"0\n",
    "version-text": b"1.5\n",
    "fleet-run": b"1\n" + store_file(
        "INSERT INTO runs VALUES (1, 'run:k', 'memstress results', 'memstress.run/1 document', 'complete', "
        "'2026-11-21T14:03:05Z', 1, 'node01.json', 'abc', '0.1.0', '[]')",
        "INSERT INTO ranks VALUES (1, 0, 'node01', '580.159.04', '13.0', '13.0', '2.28.3', 'GPU-1')",
        "INSERT INTO gpus VALUES (1, 0, 'GPU-1', 'NVIDIA H100 80GB HBM3', '0000:01:00.0', 'S1')",
        "INSERT INTO rows VALUES (1, 1, 0, 'transfers', 'bytes=64M', '{\"bytes\": \"64M\"}', 'caching', 0, 1, "
        "'NVIDIA H100 80GB HBM3', 'GPU-1', 'pass', '', 0, 0)",
        "INSERT INTO metrics VALUES (1, 1, 'GB/s', 'GB/s', 'higher', 5, 54.8, 54.4, 55.0, 54.3, 55.1, 54.7, 0.2, "
        "0.004, 5, '[54.8,54.9,54.7,54.3,55.1]')"),
    "not-a-store": b"1\nthis is not an SQLite file\n",
}

def judge_seeds() -> dict[str, bytes]:
    """accept's judge: a profile, the line `#%results`, and results (fuzz/judge.cpp). The committed healthy H100
    record cut to its three copies (no samples, no allocator statistics, each rank's environment its host and
    device), as a run of one rank and of two, whole and with one promise broken each as tests/cli/make_bad_results.py
    breaks them."""
    doc = json.loads(whole("results/h100/faults-580.159.04/accept-healthy-1.json"))
    doc["environment"]["ranks"] = [{k: r[k] for k in ("rank", "host", "device")} for r in doc["environment"]["ranks"]]
    doc["environment"]["ranks"][0]["host"] = {"name": "vm"}
    doc["rows"] = [r for r in doc["rows"] if r["workload"] == "transfers"]
    for row in doc["rows"]:
        row.pop("allocator_stats", None)
        row["metrics"] = {k: {f: v for f, v in m.items() if f != "samples"} for k, m in row["metrics"].items()
                          if k in ("GB/s", "page_locked", "vs_ref")}
    doc.pop("summary", None)
    two = json.loads(json.dumps(doc))
    second = json.loads(json.dumps(two["environment"]["ranks"][0]))
    second.update(rank=1, device={"label": "cuda:1", "uuid": "GPU-1", "pci_bus_id": "0000:00:07.0"})
    two["environment"]["ranks"].append(second)
    two["config"]["ranks"] = 2
    two["rows"] = [dict(r, rank=rank, device=dict(r["device"], label=f"cuda:{rank}", ordinal=rank,
                                                 uuid=r["device"]["uuid"] if rank == 0 else "GPU-1"))
                   for r in doc["rows"] for rank in (0, 1)]
    profile = whole("tests/data/accept/h100-two-ranks.yaml") + b"#%results\n"
    one_rank = b"name: t\ngpu: NVIDIA H100 80GB HBM3\nruns: []\nchecks:\n" \
        b"  - {name: h2d, workload: transfers, where: {direction: h2d}, metric: GB/s, golden: 55, factor: 0.75}\n" \
        b"  - {name: locked, workload: transfers, metric: page_locked, min: 1}\n" \
        b"  - {name: verdict, workload: transfers, metric: verdict, max: 0}\n#%results\n"

    def changed(base: dict, change) -> bytes:
        out = json.loads(json.dumps(base))
        change(out)
        return json.dumps(out).encode()

    def rank1_h2d(d: dict) -> dict:
        return next(r for r in d["rows"] if r["rank"] == 1 and r["params"]["direction"] == "h2d")

    stream = [dict({k: v for k, v in doc.items() if k != "rows"}, type="header")] + \
        [dict(r, type="row") for r in doc["rows"]]
    return {
        "two-ranks.txt": profile + changed(two, lambda d: None),
        "null-figure.txt": profile + changed(two, lambda d: rank1_h2d(d)["metrics"]["GB/s"].update(median=None)),
        "no-row.txt": profile + changed(two, lambda d: d["rows"].remove(rank1_h2d(d))),
        "silent-rank.txt": profile + changed(two, lambda d: d.update(rows=[r for r in d["rows"] if r["rank"] == 0])),
        "rank-7.txt": profile + changed(two, lambda d: d["rows"].append(dict(rank1_h2d(d), rank=7))),
        "errored-row.txt": one_rank + changed(doc, lambda d: d["rows"][0].update(verdict="error",
                                                                                reason="cudaErrorIllegalAddress")),
        "aborted.txt": one_rank + changed(doc, lambda d: d.update(status="aborted", abort_reason="XID 79")),
        "two-models.txt": one_rank + changed(doc, lambda d: d["rows"][1]["device"].update(name="NVIDIA H200")),
        "running.txt": one_rank + b"\n".join(json.dumps(line).encode() for line in stream) + b"\n",
    }


TARGETS = {"results": RESULTS, "ingest": INGEST, "store": STORE, "json_input": JSON, "profile": PROFILE, "replay_trace": REPLAY_TRACE,
           "alloc_conf": ALLOC_CONF, "bytes": BYTES, "params": PARAMS, "trace_file": TRACE_FILE,
           "snapshot_facts": snapshot_facts(), "judge": judge_seeds()}


def main() -> None:
    total = 0
    for target, seeds in TARGETS.items():
        out = CORPUS / target
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for name, data in seeds.items():
            (out / name).write_bytes(data)
            total += len(data)
        print(f"fuzz/corpus/{target}: {len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes")
    print(f"in all: {total} bytes")


if __name__ == "__main__":
    main()
