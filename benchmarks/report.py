"""A results file of ``run.py`` as Markdown tables, for docs/performance.md and the README.

``python benchmarks/report.py [RESULTS.json]`` (default ``docs/performance-run.json``) prints the
machine line and one table per section: figure, measured, target, result. Quoting this output keeps
the docs to figures one run measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TITLES = {
    "openai_text": "Text stream, OpenAI Chat Completions shape",
    "anthropic_text": "Text stream, Anthropic Messages shape",
    "tool_args": "Tool-call arguments in 8-byte deltas (partial arguments current after every delta)",
    "memory": "Peak memory",
    "concurrency": "Concurrent streams on threads",
    "latency": "Latency",
    "startup": "Start-up (fresh processes)",
    "observer": "OpenTelemetry plugin installed, no exporter configured",
    "processor": "StreamProcessor linearity (no server)",
}


def main(path: str) -> None:
    doc = json.loads(Path(path).read_text())
    m = doc["machine"]
    print(f"Run of {doc['date']}: {m['python']}, {m['cpus']} CPUs ({m['cpu']}), {m['system']}, "
          f"load average {m['load_average_at_start'][0]:.2f} at start; {doc['rounds']} interleaved rounds.")
    if doc["peers"]:
        print("Peers: " + ", ".join(f"{k} {v}" for p in doc["peers"].values() for k, v in p.items()) + ".")
    section = None
    for r in doc["rows"]:
        if r["section"] != section:
            section = r["section"]
            print(f"\n**{TITLES.get(section, section)}**\n\n| figure | measured | target | result |\n|---|---|---|---|")
        print(f"| {r['what']} | {r['measured']} | {r['target']} | {r['result']} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE.parent / "docs" / "performance-run.json"))
