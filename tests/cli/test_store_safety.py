#!/usr/bin/env python3
"""The fleet store (`memstress db`) and the results readers as a hostile or careless input meets them: schema
versions no memstress writes, ingests running side by side, bytes a C string cannot hold, store paths that are
not stores, a store on a read-only file system, inputs without end, and values no run produces.

    test_store_safety.py MEMSTRESS [unittest args]

MEMSTRESS is the binary under test. Each class is one CTest test (tests/cli/fleet.cmake), label cpu. The
PostgreSQL halves run where MEMSTRESS_TEST_POSTGRESQL names a server's admin database (the `postgresql`
fixture's throwaway server) and are skipped, saying so, elsewhere. Every promise is the same: the right result,
or exit 2 with one line naming the input; never a signal, a hang, "internal error", a traceback, output cut
short, or a file written outside the target.
"""

import json
import os
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from pathlib import Path

MEMSTRESS = ""
ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "tests/data/fleet"
NODES = sorted(FLEET.glob("node0*.json")) + sorted((FLEET / "driver-570").glob("node0*.json"))
GPU4 = "GPU-00000000-0000-0000-0000-000000000004"


def run(*args, timeout=120, **kwargs):
    return subprocess.run([MEMSTRESS, *map(str, args)], capture_output=True, timeout=timeout, **kwargs)


def text(p):
    return p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")


def postgresql_admin():
    return os.environ.get("MEMSTRESS_TEST_POSTGRESQL", "")


class Temp(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory(prefix="memstress-store-")
        self.dir = Path(self._dir.name)

    def tearDown(self):
        self._dir.cleanup()

    def refused(self, p, *needles):
        """Exit 2, one line of error naming each needle, no internal error."""
        out = text(p)
        self.assertEqual(p.returncode, 2, out)
        self.assertNotIn("internal error", out)
        self.assertNotIn("Traceback", out)
        errors = [line for line in p.stderr.decode(errors="replace").splitlines() if "error" in line]
        self.assertEqual(len(errors), 1, out)
        for needle in needles:
            self.assertIn(needle, errors[0])

    def store(self, *files, name="fleet.sqlite"):
        path = self.dir / name
        p = run("db", "ingest", *(files or NODES[:6]), "--db", path)
        self.assertEqual(p.returncode, 0, text(p))
        return path

    def document(self, source=FLEET / "node01.json"):
        return json.loads(source.read_text())

    def write(self, name, doc):
        path = self.dir / name
        path.write_text(json.dumps(doc))
        return path


def queries(db):
    """Every command that reads a store, with what it needs to find something in the fleet's."""
    return {
        "outliers": ["db", "outliers", "--db", db],
        "history": ["db", "history", "--db", db, "--gpu", GPU4],
        "compare": ["db", "compare", "--db", db, "--driver", "570.195.03", "--driver", "580.159.04"],
        "export": ["db", "export", "--db", db, "--format", "openmetrics"],
    }


class SchemaVersions(Temp):
    """A version past an int (SIGSEGV before) or past 32 bits (read as 1 before) is a newer memstress's store;
    one no memstress writes names the store. Every command, exit 2."""

    def test_versions(self):
        for version, message in [(2**31, "was made by a newer memstress"),
                                 (999999999999, "was made by a newer memstress"),
                                 (2**32 + 1, "was made by a newer memstress"),
                                 (0, "not a schema version memstress writes"),
                                 (-1, "not a schema version memstress writes")]:
            db = self.store(name=f"v{version}.sqlite")
            with sqlite3.connect(db) as c:
                c.execute("INSERT INTO schema_version VALUES (?, 'x')", (version,))
            for name, cmd in {**queries(db), "ingest": ["db", "ingest", NODES[7], "--db", db]}.items():
                with self.subTest(version=version, command=name):
                    self.refused(run(*cmd), message, str(db))


class ConcurrentIngests(Temp):
    """Eight ingests started together into one store, new or holding runs already: every one exits 0, and the
    store holds each run once (SQLite: BEGIN IMMEDIATE and the schema made under the writer lock; PostgreSQL:
    its advisory lock)."""

    def ingest_together(self, db, sets):
        procs = [subprocess.Popen([MEMSTRESS, "db", "ingest", *map(str, files), "--db", str(db)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for files in sets]
        for p in procs:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, (out + err).decode(errors="replace"))

    def check(self, db, runs):
        p = run("db", "export", "--db", db, "--format", "openmetrics")
        self.assertEqual(p.returncode, 0, text(p))
        hosts = {line.split('host="')[1].split('"')[0] for line in p.stdout.decode().splitlines()
                 if line.startswith("memstress_run_start_timestamp_seconds")}
        self.assertEqual(len(hosts), 6, p.stdout.decode()[:2000])
        p = run("db", "ingest", *NODES, "--db", db)
        self.assertEqual(p.returncode, 0, text(p))
        self.assertRegex(p.stdout.decode(), rf"0 added, 0 replaced, 12 unchanged, 0 skipped; .* holds {runs} run")

    def scenario(self, url_for):
        # Eight processes, each with three of the twelve files (every file in two of them).
        sets = [[NODES[(i + k) % 12] for k in (0, 4, 8)] + [NODES[(i + 6) % 12]] for i in range(8)]
        fresh = url_for("fresh")
        self.ingest_together(fresh, sets)
        self.check(fresh, 12)
        existing = url_for("existing")
        p = run("db", "ingest", NODES[0], "--db", existing)
        self.assertEqual(p.returncode, 0, text(p))
        self.ingest_together(existing, [[f] for f in NODES[1:9]])
        p = run("db", "ingest", *NODES[9:], "--db", existing)
        self.assertEqual(p.returncode, 0, text(p))
        self.check(existing, 12)

    def test_sqlite(self):
        self.scenario(lambda name: self.dir / f"{name}.sqlite")

    def test_postgresql(self):
        admin = postgresql_admin()
        if not admin:
            self.skipTest("no PostgreSQL server (MEMSTRESS_TEST_POSTGRESQL): the postgresql fixture runs this")
        made = []

        def url_for(name):
            db = f"ms_concurrent_{name}_{uuid.uuid4().hex[:8]}"
            subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", admin, "-c", f"CREATE DATABASE {db}"],
                           check=True, capture_output=True)
            made.append(db)
            return admin.replace("///postgres", f"///{db}")

        try:
            self.scenario(url_for)
        finally:
            for db in made:
                subprocess.run(["psql", "-q", admin, "-c", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"],
                               capture_output=True)


def distinct_runs(folder, count):
    """`count` runs of tests/data/fleet/node01.json, each started a minute after the one before (another run)."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = json.loads((FLEET / "node01.json").read_text())
    paths = []
    for i in range(count):
        started = f"2026-11-{1 + i // 1440:02d}T{i // 60 % 24:02d}:{i % 60:02d}:00Z"
        doc["started_at"] = started
        doc["argv"] = ["memstress", "run", "--out", f"run{i}.json"]
        path = folder / f"run{i:04d}.json"
        path.write_text(json.dumps(doc))
        paths.append(path)
    return paths


class IngestInputs(Temp):
    """What db ingest takes besides files: a folder (every results file under it, other files left alone), `-`
    (the paths standard input lists). An input that gives nothing, or names a file that is not there: one line
    naming it, exit 2, the rest kept."""

    def totals(self, p):
        return p.stdout.decode().strip().splitlines()[-1]

    def test_a_folder_is_every_results_file_under_it(self):
        tree = self.dir / "tree"
        (tree / "a" / "b").mkdir(parents=True)
        for node, where in [("node01", tree), ("node02", tree / "a"), ("node03", tree / "a" / "b")]:
            (where / f"{node}.json").write_bytes((FLEET / f"{node}.json").read_bytes())
        (tree / "a" / "notes.md").write_text("not results\n")
        p = run("db", "ingest", tree, "--db", self.dir / "s.sqlite")
        self.assertEqual(p.returncode, 0, text(p))
        self.assertIn("3 file(s): 3 added", self.totals(p))

    def test_a_folder_without_results(self):
        empty = self.dir / "empty"
        (empty / "sub").mkdir(parents=True)
        (empty / "sub" / "notes.txt").write_text("x\n")
        db = self.store()
        p = run("db", "ingest", empty, "--db", db)
        self.assertEqual(p.returncode, 2, text(p))
        self.assertEqual(p.stderr.decode().splitlines(),
                         [f"memstress db ingest: skipped '{empty}': no results files in it (names ending in .json, "
                          ".jsonl, .json.xz, .json.gz, .jsonl.xz or .jsonl.gz, in it or in folders under it)"])
        self.assertRegex(self.totals(p), r"holds 6 run")  # nothing lost

    def test_a_list_on_standard_input(self):
        db = self.dir / "s.sqlite"
        listed = "".join(f"{f}\n" for f in NODES[:3]) + f"{self.dir / 'nosuch.json'}\n\n"
        p = run("db", "ingest", "-", "--db", db, input=listed.encode())
        self.assertEqual(p.returncode, 2, text(p))
        self.assertEqual(p.stderr.decode().splitlines(),
                         [f"memstress db ingest: skipped '{self.dir / 'nosuch.json'}': no such file"])
        self.assertIn("4 file(s): 3 added, 0 replaced, 0 unchanged, 1 skipped", self.totals(p))
        p = run("db", "ingest", "-", "--db", db, input=b"")
        self.assertEqual(p.returncode, 2, text(p))
        self.assertIn("skipped '-': standard input listed no file", p.stderr.decode())
        self.refused(run("db", "ingest", "-", "-", "--db", db, input=b""), "'-' given twice")


class CrashedIngest(Temp):
    """An ingest killed (SIGKILL) while a batch is open loses that batch only: the batches committed before it
    are whole, and ingesting the same files again adds the rest; the store is then the store one ingest of
    every file makes."""

    def test_killed_mid_batch(self):
        paths = distinct_runs(self.dir / "runs", 13)
        db = self.dir / "s.sqlite"
        p = subprocess.Popen([MEMSTRESS, "db", "ingest", "-", "--batch", "5", "--db", str(db)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            p.stdin.write("".join(f"{f}\n" for f in paths[:10]).encode())
            p.stdin.flush()

            def files():
                if not db.exists():
                    return 0
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
                    try:
                        return c.execute("SELECT count(*) FROM files").fetchone()[0]
                    except sqlite3.OperationalError:  # not made yet
                        return 0

            deadline = time.monotonic() + 60
            while files() < 10 and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertEqual(files(), 10, "two batches of 5 committed")
            # Three more: a batch open (it commits at 5 files, or after 2 s), killed before it commits.
            p.stdin.write("".join(f"{f}\n" for f in paths[10:]).encode())
            p.stdin.flush()
            time.sleep(0.5)
        finally:
            p.kill()
            p.communicate()
        with sqlite3.connect(db) as c:
            self.assertEqual(c.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            self.assertEqual(c.execute("SELECT count(*) FROM files").fetchone()[0], 10)
        again = run("db", "ingest", *paths, "--db", db)
        self.assertEqual(again.returncode, 0, text(again))
        self.assertIn("13 file(s): 3 added, 0 replaced, 10 unchanged", again.stdout.decode())
        whole = self.dir / "whole.sqlite"
        self.assertEqual(run("db", "ingest", *paths, "--db", whole).returncode, 0)
        for q in ("outliers", "export"):
            args = ["--format", "openmetrics"] if q == "export" else ["--format", "json", "--min-gpus", "3"]
            self.assertEqual(run("db", q, "--db", db, *args).stdout, run("db", q, "--db", whole, *args).stdout, q)


class PruneRefusals(Temp):
    """db prune: bad input is one line, exit 2, nothing deleted; a prune of every run needs --all."""

    def test_refusals(self):
        db = self.store(*NODES)
        self.refused(run("db", "prune", "--db", db, "--before", "2100-01-01"), "would delete every run", "(12)",
                     "--all")
        self.refused(run("db", "prune", "--db", db), "give --before DATE, --keep-runs N, or both")
        self.refused(run("db", "prune", "--db", db, "--before", "yesterday"), "--before 'yesterday'")
        p = run("db", "prune", "--db", db, "--keep-runs", "0")
        self.assertEqual(p.returncode, 2, text(p))
        self.assertIn("--keep-runs: Value 0 not in range", text(p))
        self.refused(run("db", "prune", "--db", self.dir / "none.sqlite", "--keep-runs", "1"), "no such database")
        p = run("db", "prune", "--db", db, "--before", "2026-11-15")  # the 570 week goes, the 580 week stays
        self.assertEqual(p.returncode, 0, text(p))
        self.assertIn("deleted 6 of 12 run(s)", p.stdout.decode())
        p = run("db", "prune", "--db", db, "--before", "2100-01-01", "--all")
        self.assertEqual(p.returncode, 0, text(p))
        self.assertIn("deleted 6 of 6 run(s)", p.stdout.decode())


class EveryByteWritten(Temp):
    """A NUL in a results file: refused at ingest naming the file and the field (PostgreSQL would cut the text
    at it, SQLite would not: both refuse). Output that holds one anyway is written whole, never cut at it."""

    def nul_document(self):
        doc = self.document()
        doc["rows"][0]["device"]["name"] = "NVIDIA H100\u0000 80GB"
        return self.write("nul.json", doc)

    def test_ingest_refuses_a_nul(self):
        path = self.nul_document()
        p = run("db", "ingest", path, "--db", self.dir / "s.sqlite")
        self.assertEqual(p.returncode, 2, text(p))
        self.assertRegex(p.stderr.decode(), rf"skipped '{path}': row 1: field device.name: holds a NUL character")

    def test_compare_writes_every_byte(self):
        path = self.nul_document()
        for fmt in ("table", "json"):
            with self.subTest(format=fmt):
                p = run("compare", FLEET / "node01.json", path, "--format", fmt, "--match-any-gpu")
                self.assertIn(p.returncode, (0, 1), text(p))
                if fmt == "json":
                    doc = json.loads(p.stdout)  # whole, or it would not parse
                    self.assertIn("NEW on NVIDIA H100\u0000 80GB", " ".join(doc["notes"]))
                else:
                    self.assertNotIn(b"\0", p.stdout)  # shown as \x00 on a terminal
                    self.assertIn(b"NEW on NVIDIA H100\\x00 80GB", p.stdout)
                    self.assertTrue(p.stdout.endswith(b"result: no regression\n"), p.stdout[-200:])

    def test_export_and_history_write_every_byte(self):
        db = self.store(*NODES)
        with sqlite3.connect(db) as c:
            c.execute("UPDATE rows SET device_name = ?", ("NVIDIA\u0000H100",))
            c.execute("UPDATE measurements SET model = ?", ("NVIDIA\u0000H100",))  # what history reads
        p = run("db", "export", "--db", db, "--format", "openmetrics")
        self.assertEqual(p.returncode, 0, text(p))
        self.assertTrue(p.stdout.endswith(b"# EOF\n"), p.stdout[-200:])
        self.assertIn(b'model="NVIDIA\0H100"', p.stdout)
        p = run("db", "history", "--db", db, "--gpu", GPU4)
        self.assertEqual(p.returncode, 0, text(p))
        self.assertIn(b"NVIDIA\\x00H100", p.stdout)
        self.assertRegex(p.stdout.decode(), r"series on 1 GPU")


class StorePaths(Temp):
    """--db naming a device, a FIFO or a directory is refused (exit 2) by every command, and nothing is made
    beside it; a query never creates a store, nor turns an empty file into one."""

    def test_special_files(self):
        fifo = self.dir / "fifo"
        os.mkfifo(fifo)
        targets = {"a FIFO": fifo, "a directory": self.dir}
        if os.geteuid() == 0:
            null = self.dir / "null"
            os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            targets["a character device"] = null
        else:
            print("note: not root: the character-device half of this test is skipped")
        for kind, target in targets.items():
            for name, cmd in {**queries(target), "ingest": ["db", "ingest", NODES[0], "--db", target]}.items():
                with self.subTest(kind=kind, command=name):
                    self.refused(run(*cmd, timeout=30), f"--db '{target}': {kind}")
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), sorted(["fifo", "null"][:len(targets) - 1]),
                         "no -journal, -wal or -shm beside them")

    def test_queries_never_create(self):
        empty = self.dir / "empty.sqlite"
        empty.write_bytes(b"")
        for name, cmd in queries(empty).items():
            with self.subTest(command=name):
                self.refused(run(*cmd), f"database '{empty}': not a memstress store")
                self.assertEqual(empty.stat().st_size, 0)
        missing = self.dir / "missing.sqlite"
        for name, cmd in queries(missing).items():
            with self.subTest(command=name):
                self.refused(run(*cmd), f"--db '{missing}': no such database")
        self.assertEqual([p.name for p in self.dir.iterdir()], ["empty.sqlite"])


class ReadOnlyStore(Temp):
    """A store where nothing can be written (a read-only file system; else, a directory its user cannot write)
    is queried as any other: read-only, immutable where SQLite could not make its lock file."""

    def read_only_place(self, db):
        """Moves `db` somewhere unwritable; returns (its new path, how to run memstress there, cleanup)."""
        place = self.dir / "ro"
        place.mkdir()
        if os.geteuid() == 0:
            mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(place)],
                                     capture_output=True)
            if mounted.returncode == 0:
                (place / db.name).write_bytes(db.read_bytes())
                subprocess.run(["mount", "-o", "remount,ro", str(place)], check=True)
                return place / db.name, {}, lambda: subprocess.run(["umount", str(place)], check=True)
            # No mount here (a container without the capability): run as nobody, for whom a mode is a limit.
            (place / db.name).write_bytes(db.read_bytes())
            os.chmod(self.dir, 0o755)
            os.chmod(place, 0o555)
            os.chmod(place / db.name, 0o444)
            return place / db.name, {"user": 65534, "group": 65534, "extra_groups": []}, lambda: None
        (place / db.name).write_bytes(db.read_bytes())
        os.chmod(place, 0o555)
        return place / db.name, {}, lambda: os.chmod(place, 0o755)

    def test_queries(self):
        db = self.store(*NODES)
        expected = {name: run(*cmd) for name, cmd in queries(db).items()}
        ro, how, cleanup = self.read_only_place(db)
        try:
            for name, cmd in queries(ro).items():
                with self.subTest(command=name):
                    p = run(*cmd, **how)
                    self.assertEqual(p.returncode, expected[name].returncode, text(p))
                    self.assertEqual(p.stdout, expected[name].stdout)
            self.assertEqual([p.name for p in ro.parent.iterdir()], [ro.name])
            self.refused(run("db", "ingest", NODES[0], "--db", ro, **how), f"'{ro}'")
        finally:
            cleanup()


class UnboundedInputs(Temp):
    """Inputs without end: FIFOs and devices refused at once, naming them, without blocking; a file past the
    results size limit refused by its size; a text field past the store's limit refused naming it."""

    def test_special_files_are_refused_without_blocking(self):
        fifo = self.dir / "fifo"
        os.mkfifo(fifo)
        profile = ROOT / "tests/data/accept/sim-ranks.yaml"
        for source, kind in [(fifo, "a FIFO"), (Path("/dev/zero"), "a character device"),
                             (Path("/dev/urandom"), "a character device"), (self.dir, "a directory")]:
            for name, cmd in {"ingest": ["db", "ingest", source, "--db", self.dir / "s.sqlite"],
                              "compare": ["compare", source, FLEET / "node01.json"],
                              "accept": ["accept", "--profile", profile, "--from", source]}.items():
                with self.subTest(source=str(source), command=name):
                    p = run(*cmd, timeout=30)
                    self.assertEqual(p.returncode, 2, text(p))
                    if name == "ingest" and kind == "a directory":  # a folder of results files: it has none
                        self.assertIn(f"'{source}': no results files in it", text(p))
                        continue
                    self.assertIn(f"'{source}': {kind}, not a regular file", text(p))
                    self.assertNotIn("internal error", text(p))

    def test_a_huge_sparse_file_is_refused_by_its_size(self):
        sparse = self.dir / "sparse.json"
        with open(sparse, "wb") as f:
            f.truncate(6 << 30)
        for cmd in (["db", "ingest", sparse, "--db", self.dir / "s.sqlite"], ["compare", sparse, sparse]):
            with self.subTest(command=cmd[0]):
                p = run(*cmd, timeout=30)
                self.assertEqual(p.returncode, 2, text(p))
                self.assertIn("6.00 GiB, larger than the 256.00 MiB a results file may be", text(p))

    def test_a_long_text_field_is_refused_naming_it(self):
        doc = self.document()
        doc["environment"]["ranks"][0]["gpus"][0]["name"] = "H" * (1 << 20)
        path = self.write("long.json", doc)
        p = run("db", "ingest", path, "--db", self.dir / "s.sqlite")
        self.assertEqual(p.returncode, 2, text(p))
        self.assertIn("field environment.ranks[0].gpus[0].name: 1048576 bytes, longer than the 16384", text(p))


class ValuesNoRunWrites(Temp):
    """NaN thresholds, impossible dates, NaN in a memstress results file, a key twice, control characters."""

    def test_a_nan_threshold_is_refused(self):
        db = self.store()
        for value in ("nan", "NaN", "inf", "-inf"):
            with self.subTest(value=value):
                p = run("db", "outliers", "--db", db, "--threshold", value)
                self.assertEqual(p.returncode, 2, text(p))
                self.assertIn("--threshold", text(p))

    def test_impossible_dates_are_refused(self):
        db = self.store()
        for since in ("2026-13-45", "2026-02-31", "2026-02-29", "2026-11-21T24:00", "2026-11-21T23:60"):
            with self.subTest(since=since):
                self.refused(run("db", "outliers", "--db", db, "--since", since), f"--since '{since}'")
        p = run("db", "outliers", "--db", db, "--since", "2024-02-29T23:59:59Z")  # a leap day
        self.assertEqual(p.returncode, 1, text(p))
        doc = self.document()
        doc["started_at"] = "2026-02-31T10:00:00Z"
        path = self.write("when.json", doc)
        p = run("db", "ingest", path, "--db", db)
        self.assertEqual(p.returncode, 2, text(p))
        self.assertIn(f"skipped '{path}': field started_at: '2026-02-31T10:00:00Z' is not a date", text(p))

    def test_nan_in_memstress_results_is_refused(self):
        source = (FLEET / "node01.json").read_text()
        doc = json.loads(source)
        median = doc["rows"][1]["metrics"]["GB/s"]["median"]
        for word in ("NaN", "Infinity", "-Infinity"):
            path = self.dir / f"{word}.json"
            path.write_text(json.dumps(doc, indent=1).replace(f'"median": {json.dumps(median)}',
                                                               f'"median": {word}', 1))
            with self.subTest(word=word):
                p = run("compare", FLEET / "node01.json", path)
                self.refused(p, f"NEW '{path}': line ", f": {word[:4]}", "memstress results hold no NaN")
                p = run("db", "ingest", path, "--db", self.dir / "s.sqlite")
                self.assertEqual(p.returncode, 2, text(p))
                self.assertIn("memstress results hold no NaN", text(p))

    def test_a_key_twice_is_refused(self):
        source = (FLEET / "node01.json").read_text()
        self.assertTrue(source.rstrip().endswith("}"))
        path = self.dir / "twice.json"
        path.write_text(source.rstrip()[:-1] + ', "rows": []}')
        self.refused(run("compare", FLEET / "node01.json", path), f"NEW '{path}'", 'key "rows" twice', "(at /)")
        p = run("db", "ingest", path, "--db", self.dir / "s.sqlite")
        self.assertEqual(p.returncode, 2, text(p))
        self.assertIn('key "rows" twice in one object', text(p))
        doc = self.document()
        nested = json.dumps(doc).replace('"uuid": "GPU-00000000-0000-0000-0000-000000000001"',
                                         '"uuid": "GPU-1", "uuid": "GPU-2"', 1)
        path.write_text(nested)
        self.refused(run("compare", path, path), 'key "uuid" twice in one object (at /environment/ranks/0/device)')

    def test_control_characters_reach_no_terminal_raw(self):
        doc = self.document()
        evil = "H100\x1b[31mRED\rCR\nLF\x9b"
        doc["rows"][0]["device"]["name"] = evil
        doc["environment"]["ranks"][0]["host"]["name"] = "node\x1b]0;title\x07"
        path = self.write("evil.json", doc)
        p = run("compare", path, path)
        self.assertIn(p.returncode, (0, 1), text(p))
        for raw in (b"\x1b", b"\r", b"\x07", "\x9b".encode(), b"\nLF"):
            self.assertNotIn(raw, p.stdout)
        self.assertIn(b"H100\\x1b[31mRED\\rCR\\nLF\\u009b", p.stdout)
        j = run("compare", path, path, "--format", "json")
        self.assertEqual(json.loads(j.stdout)["rows"][0]["device"], evil)  # JSON keeps the exact text
        db = self.dir / "s.sqlite"
        with sqlite3.connect(self.store(*NODES, name="s.sqlite")) as c:
            c.execute("UPDATE ranks SET host = ?", ("node\x1b[2J\r\n",))
            c.execute("UPDATE devices SET host = ?", ("node\x1b[2J\r\n",))  # a GPU as last seen: history's
        p = run("db", "history", "--db", db, "--gpu", GPU4)
        self.assertEqual(p.returncode, 0, text(p))
        self.assertNotIn(b"\x1b", p.stdout)
        self.assertIn(b"host node\\x1b[2J\\r\\n", p.stdout)
        e = run("db", "export", "--db", db, "--format", "openmetrics")
        self.assertIn('host="node\x1b[2J\r\\n"'.encode(), e.stdout)  # OpenMetrics escapes only \, " and LF


if __name__ == "__main__":
    MEMSTRESS = sys.argv.pop(1)
    unittest.main()
