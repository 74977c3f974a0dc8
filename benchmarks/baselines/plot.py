#!/usr/bin/python3
"""Draws a `sluice bench --json` file as one PNG: a panel per scenario and metric (a scenario whose cases
measure different things, as service's GB/s and elements/s, gets a panel for each), a group of bars per case (record
size, thread count, replica count, ...), one bar per side (sluice first, then its baselines) at the median
of its runs, with a line from the fastest to the slowest run. A panel whose medians span more than 30x
(checkpoint resume times, the service's elements/s against an in-process pipeline) gets a log axis, so that
the small bars stay visible. Needs Debian's python3-matplotlib.

  /usr/bin/python3 plot.py bench.json bench.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        print("usage: plot.py BENCH.json OUT.png", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    panels = []  # (scenario, its cases of one metric), in the file's order
    for scenario in doc["scenarios"]:
        metrics = []
        for case in scenario["cases"]:
            if case["metric"] not in metrics:
                metrics.append(case["metric"])
        for metric in metrics:
            panels.append((scenario, [c for c in scenario["cases"] if c["metric"] == metric]))
    if not panels:
        print("plot.py: no results to draw", file=sys.stderr)
        return 1
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 3.6 * len(panels)), squeeze=False)
    for ax, (scenario, cases) in zip(axes[:, 0], panels):
        sides = []
        for case in cases:
            for side in case["sides"]:
                if side["name"] not in sides:
                    sides.append(side["name"])
        colors = {name: f"C{k}" for k, name in enumerate(sides)}
        labelled = set()
        for i, case in enumerate(cases):
            present = [s for s in case["sides"] if s["median"] is not None]
            width = 0.8 / max(1, len(present))
            for k, side in enumerate(present):
                x = i + (k - (len(present) - 1) / 2) * width
                low, high = side["median"] - side["min"], side["max"] - side["median"]
                label = side["name"] if side["name"] not in labelled else None
                labelled.add(side["name"])
                ax.bar([x], [side["median"]], width, yerr=[[low], [high]], capsize=3,
                       color=colors[side["name"]], label=label)
        medians = [s["median"] for c in cases for s in c["sides"] if s["median"] is not None and s["median"] > 0]
        log = bool(medians) and max(medians) > 30 * min(medians)
        if log:
            ax.set_yscale("log")
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([c["name"] for c in cases], rotation=12, fontsize=8)
        metrics = sorted({c["metric"] for c in cases})
        ax.set_ylabel(", ".join(metrics))
        lower = any(not c["higher_is_better"] for c in cases)
        ax.set_title(f"{scenario['scenario']} ({'lower' if lower else 'higher'} is better; "
                     f"median of runs, bars: min..max{'; log scale' if log else ''})", fontsize=10)
        ax.legend(fontsize=8)
    machine = doc.get("machine", {})
    fig.suptitle(f"sluice bench {doc.get('date', '')}, {machine.get('cores', '?')} cores, "
                 f"load {machine.get('load_average', '?')}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.98))  # room for the title
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
