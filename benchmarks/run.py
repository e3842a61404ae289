"""Run every benchmark and print one table of ratios measured in this run (``tox -e bench``).

``python benchmarks/run.py [--quick]``: bench_pipeline (throughput vs the floor and the official SDKs,
tool-argument streaming, latency, concurrency, memory), then bench_processor when present (its own
ratios, printed as it reports them). Numbers are medians of interleaved repeats; compare ratios only.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_pipeline  # noqa: E402


def main(argv: list[str]) -> int:
    print(f"# hookstream benchmarks: {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, {platform.machine()} {platform.system()}")
    rows = bench_pipeline.main(argv)
    bench_pipeline.print_table(rows)
    processor = HERE / "bench_processor.py"
    if processor.exists():
        print("\n# StreamProcessor linearity (benchmarks/bench_processor.py)")
        done = subprocess.run([sys.executable, str(processor)], check=False)
        if done.returncode:
            print(f"bench_processor.py exited with {done.returncode}")
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
