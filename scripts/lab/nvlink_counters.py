#!/usr/bin/env python3
"""scripts/lab/nvlink_counters.py COMMAND...: NVML's NVLink data-link counters of every GPU, summed over each
GPU's active links, before and after COMMAND, and their change: replay, recovery, CRC-flit, data CRC and data
ECC (nvmlDeviceGetNvLinkErrorCounter). What told memstress's NVLink errors apart from the corrected data
errors healthy links count (Note [NVLink errors that are errors], harness/env/health_nvml.cpp). Prints one
line per GPU and counter: `(GPU, counter) delta D now N rc {NVML return codes}`. Exit: COMMAND's, or 3
without NVML.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys

COUNTERS = ("replay", "recovery", "crc_flit", "crc_data", "ecc_data")  # nvmlNvLinkErrorCounter_t 0..4
MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS
ENABLED = 1


def read(nvml: ctypes.CDLL) -> dict[tuple[int, int, int], tuple[int, int]]:
    count = ctypes.c_uint(0)
    nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
    out = {}
    for gpu in range(count.value):
        handle = ctypes.c_void_p()
        nvml.nvmlDeviceGetHandleByIndex_v2(gpu, ctypes.byref(handle))
        for link in range(MAX_LINKS):
            state = ctypes.c_int(0)
            if nvml.nvmlDeviceGetNvLinkState(handle, link, ctypes.byref(state)) != 0 or state.value != ENABLED:
                continue
            for counter in range(len(COUNTERS)):
                value = ctypes.c_ulonglong(0)
                rc = nvml.nvmlDeviceGetNvLinkErrorCounter(handle, link, counter, ctypes.byref(value))
                out[(gpu, link, counter)] = (rc, value.value)
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as e:
        print(f"scripts/lab/nvlink_counters.py: no NVML ({e})", file=sys.stderr)
        return 3
    nvml.nvmlInit_v2()
    before = read(nvml)
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = read(nvml)
    totals: dict[tuple[int, str], list] = {}
    for key, (_, start) in before.items():
        rc, now = after.get(key, (-1, start))
        total = totals.setdefault((key[0], COUNTERS[key[2]]), [0, 0, set()])
        total[0] += now - start
        total[1] += now
        total[2].add(rc)
    for key in sorted(totals):
        print(key, "delta", totals[key][0], "now", totals[key][1], "rc", totals[key][2])
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
