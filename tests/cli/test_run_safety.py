#!/usr/bin/env python3
"""memstress's outputs, runs and inputs as a hostile or careless user meets them (the bad-input audit):
outputs that cannot destroy, runs that cannot collide, signals that keep the results and leave no workers,
inputs that cannot exhaust memory, bytes that are not UTF-8.

    test_run_safety.py MEMSTRESS [unittest args]

MEMSTRESS is the binary under test. Each class is one CTest test (tests/cli/CMakeLists.txt), label cpu.
Device nodes are made with mknod in a temporary directory (as root, as CI runs; skipped with the reason
otherwise): no test ever points at the real /dev/null.
"""

import gzip
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import xml.dom.minidom
from pathlib import Path

MEMSTRESS = ""
ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "tests/data/replay/two_devices.trace.csv"
PROFILE = ROOT / "tests/data/accept/sim-ranks.yaml"
SMALL = ["-d", "sim:8G", "-p", "bytes=1M", "-n", "1", "-w", "0", "-q"]
# A dataloader case that runs until stopped: process workers, many batches.
ENDLESS = ["dataloader", "-d", "sim:8G", "-p", "workers=process", "-p", "producers=2", "-p", "batches=100000000",
           "-p", "bytes=1M", "-p", "pin=false", "-n", "1", "-w", "0"]


def run(*args, env=None, timeout=300, cwd=None):
    return subprocess.run([MEMSTRESS, *args], capture_output=True, timeout=timeout, env=env, cwd=cwd)


def text(p):
    return p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")


class Temp(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory(prefix="memstress-safety-")
        self.dir = Path(self._dir.name)

    def tearDown(self):
        self._dir.cleanup()

    def special_files(self):
        """A character device (as root) and a FIFO, in the temporary directory."""
        fifo = self.dir / "fifo"
        os.mkfifo(fifo)
        files = {"a FIFO": fifo}
        if os.geteuid() == 0:
            null = self.dir / "null"
            os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
            files["a character device"] = null
        return files


class OutputsNeverReplaceSpecialFiles(Temp):
    """Point 1: an output flag aimed at a device node, a FIFO or a directory is refused (exit 2) before
    anything runs, naming the flag; the node is left as it was. Regular files and links to them still work."""

    def commands(self, target):
        return {
            "run --out": ["run", "alloc-smoke", *SMALL, "--out", str(target)],
            "run --junit": ["run", "alloc-smoke", *SMALL, "--junit", str(target)],
            "run --snapshot": ["run", "alloc-smoke", *SMALL, "--snapshot", str(target)],
            "replay --out": ["replay", str(TRACE), "-d", "sim:1G", "--out", str(target)],
            "replay --timeline": ["replay", str(TRACE), "-d", "sim:1G", "--timeline", str(target)],
            "accept --junit": ["accept", "--profile", str(PROFILE), "-d", "sim:8G", "--junit", str(target)],
            "doctor --out": ["doctor", str(TRACE), "--out", str(target)],
            "predict-batch --out": ["predict-batch", str(TRACE), str(TRACE), "--batch", "8,16", "--out",
                                    str(target)],
        }

    def test_special_files_are_refused(self):
        if os.geteuid() != 0:
            print("note: not root: the character-device half of this test is skipped (FIFOs still tested)")
        targets = self.special_files()
        targets["a directory"] = self.dir / "adir"
        targets["a directory"].mkdir()
        for kind, target in targets.items():
            before = os.lstat(target)
            for name, cmd in self.commands(target).items():
                with self.subTest(kind=kind, command=name):
                    p = run(*cmd)
                    flag = name.split()[1]
                    self.assertEqual(p.returncode, 2, text(p))
                    self.assertIn(flag, text(p))
                    self.assertRegex(text(p), "not a regular file|does not exist or is not writable")
                    self.assertNotIn("passed", p.stderr.decode(errors="replace"), "refused before running")
                    after = os.lstat(target)
                    self.assertEqual(stat.S_IFMT(after.st_mode), stat.S_IFMT(before.st_mode))
                    self.assertEqual(after.st_ino, before.st_ino)
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), sorted(t.name for t in targets.values()),
                         "no results or temporary files left beside them")

    def test_a_link_to_a_regular_file_is_followed_and_kept(self):
        real = self.dir / "real.json"
        real.write_text("old")
        link = self.dir / "link.json"
        link.symlink_to(real)
        p = run("run", "alloc-smoke", *SMALL, "--out", str(link))
        self.assertEqual(p.returncode, 0, text(p))
        self.assertTrue(link.is_symlink())
        self.assertEqual(json.loads(real.read_text())["status"], "complete")

    def test_a_link_to_a_device_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to make a device node")
        node = self.special_files()["a character device"]
        link = self.dir / "to-null.json"
        link.symlink_to(node)
        p = run("run", "alloc-smoke", *SMALL, "--out", str(link))
        self.assertEqual(p.returncode, 2, text(p))
        self.assertIn("leads to a character device", text(p))
        self.assertTrue(stat.S_ISCHR(os.stat(node).st_mode))

    def test_an_empty_path_is_refused(self):
        for flag in ["--out", "--junit", "--snapshot"]:
            with self.subTest(flag=flag):
                p = run("run", "alloc-smoke", *SMALL, flag, "")
                self.assertEqual(p.returncode, 2, text(p))
                self.assertIn(flag, text(p))

    def test_a_bad_snapshot_directory_is_refused_before_the_first_case(self):
        p = run("run", "alloc-smoke", "-d", "sim:8G", "-p", "bytes=1M", "-n", "1", "--snapshot",
                str(self.dir / "nosuch" / "snap.json"))
        self.assertEqual(p.returncode, 2, text(p))
        self.assertIn("--snapshot", text(p))
        self.assertNotIn("alloc-smoke bytes", p.stderr.decode(), "no case ran")


class OutputsNeverCollide(Temp):
    """Two outputs of one run on one file (however spelt: ./x, a link, the --out's .jsonl stream) are refused
    before anything runs (exit 2 naming both flags), since the last written would replace the other."""

    def test_outputs_on_one_file_are_refused(self):
        kept = self.dir / "kept.json"
        kept.write_text("kept")
        link = self.dir / "link.json"
        link.symlink_to(kept)
        cases = {
            "--out and --junit": ["--out", "x.json", "--junit", "x.json"],
            "--junit on --out's stream": ["--out", "x.json", "--junit", "x.jsonl"],
            "--snapshot and --out": ["--out", "x.json", "--snapshot", "./x.json"],
            "--alloc-trace on --out's stream": ["--out", "x.json", "--alloc-trace", "sub/../x.jsonl"],
            "--snapshot through a link": ["--out", str(link), "--snapshot", "kept.json"],
            "--junit and --snapshot": ["--junit", "y.xml", "--snapshot", str(self.dir / "y.xml")],
        }
        (self.dir / "sub").mkdir()
        for name, flags in cases.items():
            with self.subTest(case=name):
                p = run("run", "alloc-smoke", *SMALL, *flags, cwd=self.dir)
                self.assertEqual(p.returncode, 2, text(p))
                first, second = [f"{f}('s stream)?" for f in flags if f.startswith("--")][:2]
                self.assertRegex(text(p), f"{first} .* and {second} .* are the same file|"
                                          f"{second} .* and {first} .* are the same file")
                self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["kept.json", "link.json", "sub"],
                                 "nothing written")
                self.assertEqual(kept.read_text(), "kept")
        p = run("run", "alloc-smoke", *SMALL, "--out", "x.json", "--junit", "x.xml", "--snapshot", "s.json",
                cwd=self.dir)
        self.assertEqual(p.returncode, 0, text(p))


def wait_for(predicate, seconds=60.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def children(pid):
    """The pids of `pid`'s children (Linux /proc)."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def alive(pid):
    """Running, not a zombie (a zombie is dead, waiting for whoever reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class RunsCannotCollide(Temp):
    """Point 2: a second run given the same --out is refused at once (exit 2) naming the file; the first
    run's stream and document stay whole."""

    def test_the_second_run_is_refused(self):
        out = self.dir / "run.json"
        first = subprocess.Popen([MEMSTRESS, "run", "alloc-smoke", *ENDLESS, "--out", str(out)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            jsonl = self.dir / "run.jsonl"
            self.assertTrue(wait_for(lambda: jsonl.exists() and b'"type":"row"' in jsonl.read_bytes()))
            second = run("run", "alloc-smoke", *SMALL, "--out", str(out))
            self.assertEqual(second.returncode, 2, text(second))
            self.assertIn("another memstress run is writing", text(second))
            self.assertIn(str(jsonl), text(second))
            lines = jsonl.read_text().splitlines()
            self.assertEqual([json.loads(x)["type"] for x in lines[:2]], ["header", "row"])
            self.assertEqual(sum(json.loads(x)["type"] == "header" for x in lines), 1)
        finally:
            first.terminate()
            first.communicate(timeout=60)
        doc = json.loads(out.read_text())
        self.assertEqual(doc["status"], "aborted")
        self.assertEqual(len(doc["rows"]), 1)
        # Once the first run is over, the file is free again.
        again = run("run", "alloc-smoke", *SMALL, "--out", str(out))
        self.assertEqual(again.returncode, 0, text(again))


class SignalsKeepTheResults(Temp):
    """Point 3: SIGINT and SIGTERM in the middle of a case end the run by that signal after writing the
    aborted document, the stream's footer and JUnit; forked workers die with it. SIGKILL keeps whole lines
    and leaves no workers either (they die with their parent)."""

    def start(self):
        out = self.dir / "run.json"
        p = subprocess.Popen([MEMSTRESS, "run", "alloc-smoke", *ENDLESS, "--out", str(out), "--junit",
                              str(self.dir / "run.xml")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        jsonl = self.dir / "run.jsonl"
        self.assertTrue(wait_for(lambda: jsonl.exists() and b'"type":"row"' in jsonl.read_bytes()))
        self.assertTrue(wait_for(lambda: len(children(p.pid)) >= 2), "the dataloader's workers started")
        return p, children(p.pid)

    def check_workers_gone(self, workers):
        self.assertTrue(wait_for(lambda: not any(alive(w) for w in workers), 10),
                        f"workers still running: {[w for w in workers if alive(w)]}")

    def interrupt(self, sig):
        p, workers = self.start()
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, -sig, err.decode())
        name = signal.Signals(sig).name
        self.assertIn(f"interrupted by {name}", err.decode())
        self.check_workers_gone(workers)
        doc = json.loads((self.dir / "run.json").read_text())
        self.assertEqual(doc["status"], "aborted")
        self.assertIn(name, doc["abort_reason"])
        self.assertEqual([r["workload"] for r in doc["rows"]], ["alloc-smoke"])
        lines = [json.loads(x) for x in (self.dir / "run.jsonl").read_text().splitlines()]
        self.assertEqual(lines[-1]["type"], "footer")
        self.assertEqual(lines[-1]["status"], "aborted")
        junit = xml.dom.minidom.parse(str(self.dir / "run.xml"))
        self.assertIn("run aborted", junit.toxml())
        # compare reads what was kept.
        c = run("compare", str(self.dir / "run.json"), str(self.dir / "run.jsonl"))
        self.assertIn(c.returncode, (0, 1), text(c))

    def test_sigterm(self):
        self.interrupt(signal.SIGTERM)

    def test_sigint(self):
        self.interrupt(signal.SIGINT)

    def test_sigkill(self):
        p, workers = self.start()
        p.kill()
        p.communicate(timeout=60)
        self.check_workers_gone(workers)
        self.assertFalse((self.dir / "run.json").exists(), "no document: the process had no chance")
        for line in (self.dir / "run.jsonl").read_text().splitlines():
            json.loads(line)  # every line whole

    def test_a_worker_stopped_alone_ends_the_case_not_the_run(self):
        p, workers = self.start()
        os.kill(workers[0], signal.SIGTERM)  # workers take SIGTERM themselves (the parent blocks it)
        self.assertTrue(wait_for(lambda: not alive(workers[0]), 10))
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 1, err.decode())
        doc = json.loads((self.dir / "run.json").read_text())
        self.assertEqual(doc["status"], "complete")
        self.assertEqual(doc["rows"][-1]["verdict"], "error")
        self.assertIn("producer", doc["rows"][-1]["reason"])


def peak_rss_kib(*args):
    """The peak resident memory of `memstress ARGS`, in KiB (run in a fresh python, so the figure is its own)."""
    probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", probe, MEMSTRESS, *args], capture_output=True, text=True,
                       timeout=600)
    rc, kib = p.stdout.split()
    return int(rc), int(kib)


def skip_unless_memory_is_ours(test):
    """Peak RSS under a sanitizer is mostly the sanitizer's (shadow memory, ASan's quarantine of freed
    blocks): memory figures are asserted in the plain presets, where they are memstress's own."""
    sanitizer = os.environ.get("MEMSTRESS_SANITIZER", "")
    if sanitizer:
        test.skipTest(f"memory figures are not memstress's own under -fsanitize={sanitizer}: "
                      "asserted in the cpu preset")


class InputsCannotExhaust(Temp):
    """Point 4: a plan above --max-cases is refused; rows are streamed, so memory does not grow with the
    number of cases; a gzip bomb of blank lines and an endless line are read in constant memory."""

    def test_a_huge_plan_is_refused_unless_asked_for(self):
        p = run("run", "alloc-smoke", "-d", "sim", "-b", "1K", "-e", "100M", "-i", "1K", "-n", "1")
        self.assertEqual(p.returncode, 2, text(p))
        self.assertIn("more than --max-cases 10000", text(p))
        p = run("run", "alloc-smoke", "-d", "sim", "-b", "1K", "-e", "20K", "-i", "1K", "-n", "1", "-q",
                "--max-cases", "10")
        self.assertEqual(p.returncode, 2, text(p))
        p = run("run", "alloc-smoke", "-d", "sim", "-b", "1K", "-e", "20K", "-i", "1K", "-n", "1", "-w", "0", "-q",
                "-p", "count=1", "--max-cases", "20", "--format", "csv")
        self.assertEqual(p.returncode, 0, text(p))

    def test_memory_does_not_grow_with_the_cases(self):
        skip_unless_memory_is_ours(self)
        def rss(cases, *extra):
            rc, kib = peak_rss_kib("run", "alloc-smoke", "-d", "sim", "-b", "1K", "-e", f"{cases}K", "-i", "1K",
                                   "-p", "count=1", "-n", "5", "-w", "0", "-q", *extra)
            self.assertEqual(rc, 0)
            return kib

        for extra in (["--out", str(self.dir / "r.json")], ["--format", "json"]):
            with self.subTest(extra=extra[0]):
                small, large = rss(200, *extra), rss(3000, *extra)
                # Before rows were streamed: ~50 KiB a case, 140 MiB more for 2,800 more cases.
                self.assertLess(large - small, 40 * 1024, f"{small} KiB -> {large} KiB")
        doc = json.loads((self.dir / "r.json").read_text())
        self.assertEqual(len(doc["rows"]), 3000)
        self.assertEqual(len(doc["rows"][0]["metrics"]["alloc"]["samples"]), 5, "full rows in the document")

    def test_a_gzip_of_blank_lines_is_read_in_constant_memory(self):
        skip_unless_memory_is_ours(self)  # and 256 MiB read under TSan takes minutes
        bomb = self.dir / "blank.trace.csv.gz"
        with gzip.open(bomb, "wb", compresslevel=9) as f:
            f.write(b"# memstress-trace v1\nseq,time_ns,action,id,bytes,stream,device\n")
            for _ in range(16):
                f.write(b"\n" * (1 << 24))  # 256 MiB of blank lines in all, ~260 KB compressed
        rc, kib = peak_rss_kib("replay", str(bomb), "-d", "sim:1G")
        self.assertEqual(rc, 2, "no events: nothing to replay")
        self.assertLess(kib, 100 * 1024)

    def test_an_endless_line_is_refused(self):
        bomb = self.dir / "long.trace.csv.gz"
        with gzip.open(bomb, "wb") as f:
            f.write(b"# memstress-trace v1\nseq,time_ns,action,id,bytes,stream,device\n" + b"1" * (64 << 20))
        p = run("replay", str(bomb), "-d", "sim:1G")
        self.assertEqual(p.returncode, 2, text(p))
        self.assertIn(":3: a line longer than 1048576 bytes", text(p))


class BytesThatAreNotUtf8(Temp):
    """Point 8: a path, an environment variable or a trace's device label that is not UTF-8 is carried into
    the results as U+FFFD, never an internal error; JSON and JUnit stay valid."""

    def test_paths_and_variables(self):
        out = os.fsencode(str(self.dir)) + b"/run-\xff.json"
        junit = os.fsencode(str(self.dir)) + b"/j-\xfe.xml"
        env = dict(os.environb)
        env[b"CUDA_VISIBLE_DEVICES"] = b"\xff0"
        p = subprocess.run([os.fsencode(MEMSTRESS), b"run", b"alloc-smoke", *map(os.fsencode, SMALL), b"--out",
                            out, b"--junit", junit, b"--format", b"json"], capture_output=True, env=env,
                           timeout=300)
        self.assertEqual(p.returncode, 0, text(p))
        for doc in (json.loads(p.stdout), json.loads(Path(os.fsdecode(out)).read_bytes())):
            self.assertEqual(doc["environment"]["ranks"][0]["variables"]["CUDA_VISIBLE_DEVICES"], "\ufffd0")
            self.assertIn("run-\ufffd.json", " ".join(doc["argv"]))
        xml.dom.minidom.parse(os.fsdecode(junit))

    def test_a_trace_device_label(self):
        trace = self.dir / "t.trace.csv"
        trace.write_bytes(b"# memstress-trace v1\nseq,time_ns,action,id,bytes,stream,device\n"
                          b"1,0,alloc,1,1024,0,cuda:\xff\n2,1,free,1,1024,0,cuda:\xff\n")
        p = run("replay", str(trace), "-d", "sim:1G", "--format", "json")
        self.assertEqual(p.returncode, 0, text(p))
        self.assertIn("\ufffd", json.dumps(json.loads(p.stdout), ensure_ascii=False))


if __name__ == "__main__":
    MEMSTRESS = sys.argv.pop(1)
    unittest.main()
