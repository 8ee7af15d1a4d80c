#!/usr/bin/env python3
"""gen/measure_parts.py - measures the NVRTC time of each device group, for gen/part_costs.json.

    python3 gen/measure_parts.py [--jobs N] [--rounds R] [--nvrtc build/nvrtc_compile]

On a GPU, gpuos_create compiles the device source as several relocatable NVRTC programs on as
many threads and links them; the compile lasts as long as its slowest program. gen/gen.py
(DEVICE PARTS) spreads the groups over the programs by the times this script measures:
each group compiled alone (-DGPUOS__D_ONLY=g), the persistent kernel and dispatcher alone
(part 0 with no group), minus an empty program's time. The smallest of R rounds is kept.
No GPU is needed (NVRTC only). Rerun it after a large change to the device code, then
`make gen`: the partition changes only when this file's output does.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / 'src' / 'generated' / 'gpuos_device.cu'
OUT = ROOT / 'gen' / 'part_costs.json'
OPTS = ['--gpu-architecture=sm_90', '-default-device', '--std=c++17', '-rdc=true', '--maxrregcount=128',
        '-DGPUOS__D_NPARTS=8']


def compile_ms(nvrtc, only, part):
    cmd = [nvrtc, str(SRC)] + OPTS + ['-DGPUOS__D_PART=%d' % part, '-DGPUOS__D_ONLY=%d' % only]
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    ms = (time.monotonic() - t0) * 1e3
    if r.returncode != 0:
        sys.exit('measure_parts: %s failed:\n%s' % (' '.join(cmd), r.stdout.decode(errors='replace')[-2000:]))
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--nvrtc', default=str(ROOT / 'build' / 'nvrtc_compile'))
    a = ap.parse_args()
    keys = {}
    for m in re.finditer(r'^#define GPUOS__D_PG(\d+) .*/\* (\S.*?) \*/$', SRC.read_text(), re.M):
        keys[int(m.group(1))] = m.group(2)
    if not keys:
        sys.exit('measure_parts: no GPUOS__D_PG lines in %s (run make gen first)' % SRC)
    jobs = [(-1, 1), (-1, 0)] + [(g, 1) for g in sorted(keys)]
    best = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for _ in range(a.rounds):
            for job, ms in zip(jobs, ex.map(lambda j: compile_ms(a.nvrtc, *j), jobs)):
                best[job] = min(best.get(job, ms), ms)
    base = best[(-1, 1)]
    cpu = ''
    try:
        cpu = next(ln.split(':', 1)[1].strip() for ln in open('/proc/cpuinfo') if ln.startswith('model name'))
    except (OSError, StopIteration):
        pass
    out = {
        'about': 'NVRTC ms per device group compiled alone, less an empty program; written by '
                 'gen/measure_parts.py, read by gen/gen.py (DEVICE PARTS)',
        'measured_on': cpu,
        'empty_program_ms': round(base),
        'kernel_ms': max(1, round(best[(-1, 0)] - base)),
        'groups': {keys[g]: max(1, round(best[(g, 1)] - base)) for g in sorted(keys)},
    }
    OUT.write_text(json.dumps(out, indent=1, sort_keys=False) + '\n')
    total = out['kernel_ms'] + sum(out['groups'].values())
    print('measure_parts: %d groups, kernel %d ms, all %d ms -> %s' % (len(keys), out['kernel_ms'], total,
                                                                       OUT.relative_to(ROOT)))


if __name__ == '__main__':
    main()
