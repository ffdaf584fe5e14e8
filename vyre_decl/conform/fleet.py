"""The fleet report: one certification per worker of a cluster, seen side by side, to answer
"which device and driver breaks which op?". A matrix of units (op x types, programs, routines)
against devices (device, driver, worker) with verdicts, as JSON, as a text table and as one
standalone HTML page (inline style, no script, nothing fetched).
"""

from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

__all__ = ["FLEET_SCHEMA", "fleet_report", "fleet_table", "fleet_html"]

FLEET_SCHEMA = "vyre_decl.fleet/1"
_NOT_RUN = "-"


def _column(result: Mapping[str, Any]) -> dict[str, Any]:
    cert = result.get("certificate")
    if cert is None:
        return {"worker": result["worker"], "device": None, "driver": None, "compute_capability": None,
                "ptx_target": None, "verdict": "error", "error": result.get("error", "no certificate"),
                "summary": None}
    b = cert["backend"]
    return {"worker": result["worker"], "device": b.get("device"), "driver": b.get("driver_version"),
            "compute_capability": b.get("compute_capability"), "ptx_target": b.get("ptx_target"),
            "backend": b.get("id"), "verdict": cert["summary"]["verdict"], "summary": cert["summary"],
            "registry_fingerprint": cert["registry_fingerprint"], "seed": cert["seed"]}


def _verdicts(cert: Mapping[str, Any]) -> dict[str, str]:
    """Unit label -> verdict for one certificate (programs and routines over all their sizes)."""
    out = {f"op {k}": e["verdict"] for k, e in cert["ops"].items()}
    out.update({f"program {k}": e["verdict"] for k, e in cert.get("programs", {}).items()})
    out.update({f"routine {k}": e["verdict"] for k, e in cert.get("routines", {}).items()})
    return out


def _first_failure(cert: Mapping[str, Any], label: str) -> str:
    kind, _, key = label.partition(" ")
    if kind == "op":
        failures = cert["ops"][key]["failures"]
    else:
        section = cert["programs" if kind == "program" else "routines"][key]
        failures = [f for run in section["runs"].values() for f in run["failures"]]
    return failures[0]["message"] if failures else "failed"


def fleet_report(results: Sequence[Mapping[str, Any]], started: str, finished: str) -> dict[str, Any]:
    """The report of one certification per worker (``cluster.fleet_certificates``)."""
    columns = [_column(r) for r in results]
    certs = [r.get("certificate") for r in results]
    labels = sorted({label for c in certs if c is not None for label in _verdicts(c)})
    matrix: dict[str, list[str]] = {}
    failures: dict[str, dict[str, str]] = {}
    for label in labels:
        row = []
        for col, cert in zip(columns, certs):
            verdict = _verdicts(cert).get(label, _NOT_RUN) if cert is not None else _NOT_RUN
            row.append(verdict)
            if verdict == "fail" and cert is not None:
                failures.setdefault(label, {})[col["worker"]] = _first_failure(cert, label)
        matrix[label] = row
    differing = [label for label, row in matrix.items() if any(v != "pass" for v in row)]
    return {"schema": FLEET_SCHEMA, "started": started, "finished": finished, "devices": columns,
            "units": len(labels), "failing_units": differing, "matrix": matrix, "failures": failures,
            "verdict": "pass" if columns and all(c["verdict"] == "pass" for c in columns) else "fail"}


def _device_label(col: Mapping[str, Any]) -> str:
    if col["device"] is None:
        return f"{col['worker']}: {col.get('error')}"
    driver = f", driver {col['driver']}" if col.get("driver") else ""
    cc = f", cc {col['compute_capability']}" if col.get("compute_capability") else ""
    return f"{col['device']}{cc}{driver} (worker {col['worker']})"


def fleet_table(report: Mapping[str, Any], limit: int = 60) -> str:
    """The report as text: the devices with their totals, then every unit that fails somewhere."""
    cols = report["devices"]
    lines = [f"vyre_decl fleet: {len(cols)} devices, {report['units']} units"]
    for i, col in enumerate(cols):
        s = col.get("summary")
        totals = (f"{s['op_types_passed']}/{s['op_types']} op x types, {s['programs_passed']}/{s['programs']} "
                  f"programs, {s['routines_passed']}/{s['routines']} routines" if s else "no certificate")
        lines.append(f"  [{i}] {_device_label(col)}: {totals}: {col['verdict'].upper()}")
    failing = report["failing_units"]
    if not failing:
        lines.append("every unit passes on every device")
        return "\n".join(lines)
    width = max(len(label) for label in failing[:limit])
    lines += ["", "units that fail somewhere:", " " * (width + 2) + "  ".join(f"[{i}]".center(4) for i in
                                                                             range(len(cols)))]
    for label in failing[:limit]:
        cells = "  ".join(v.upper().center(4) if v == "fail" else v.center(4) for v in report["matrix"][label])
        lines.append(f"  {label.ljust(width)}{cells}")
    if len(failing) > limit:
        lines.append(f"  ... and {len(failing) - limit} more (see the JSON report)")
    lines.append(f"verdict: {report['verdict'].upper()}")
    return "\n".join(lines)


_STYLE = """
body { font: 14px system-ui, sans-serif; margin: 2em; color: #222 }
table { border-collapse: collapse; margin: 1em 0 }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left }
td.pass { background: #e6f4e6 } td.fail { background: #f8d7d7; font-weight: bold } td.na { color: #999 }
td.unit { font-family: ui-monospace, monospace }
"""


def fleet_html(report: Mapping[str, Any]) -> str:
    """The report as one standalone HTML page."""
    e = html.escape
    cols = report["devices"]
    head = "".join(f"<th title=\"{e(_device_label(c))}\">[{i}]</th>" for i, c in enumerate(cols))

    def rows(labels: Sequence[str]) -> str:
        out = []
        for label in labels:
            cells = []
            for col, v in zip(cols, report["matrix"][label]):
                why = report["failures"].get(label, {}).get(col["worker"], "")
                cls = {"pass": "pass", "fail": "fail"}.get(v, "na")
                cells.append(f"<td class=\"{cls}\" title=\"{e(why)}\">{e(v)}</td>")
            out.append(f"<tr><td class=\"unit\">{e(label)}</td>{''.join(cells)}</tr>")
        return "\n".join(out)

    devices = "\n".join(
        f"<tr><td>[{i}]</td><td>{e(str(c['worker']))}</td><td>{e(str(c['device'] or c.get('error')))}</td>"
        f"<td>{e(str(c.get('driver') or ''))}</td><td>{e(str(c.get('compute_capability') or ''))}</td>"
        f"<td class=\"{'pass' if c['verdict'] == 'pass' else 'fail'}\">{e(c['verdict'])}</td></tr>"
        for i, c in enumerate(cols))
    failing = report["failing_units"]
    failing_part = (f"<h2>Units that fail somewhere ({len(failing)})</h2>\n<table id=\"failing\"><tr><th>unit</th>"
                    f"{head}</tr>\n{rows(failing)}\n</table>" if failing else
                    "<p id=\"failing\">Every unit passes on every device.</p>")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>vyre_decl fleet report</title><style>{_STYLE}</style></head>
<body>
<h1>vyre_decl fleet report: {e(report['verdict'].upper())}</h1>
<p>{len(cols)} devices, {report['units']} units; {e(report['started'])} to {e(report['finished'])}.</p>
<h2>Devices</h2>
<table id="devices"><tr><th></th><th>worker</th><th>device</th><th>driver</th><th>cc</th><th>verdict</th></tr>
{devices}
</table>
{failing_part}
<details><summary>All units</summary>
<table id="all"><tr><th>unit</th>{head}</tr>
{rows(sorted(report['matrix']))}
</table></details>
</body></html>
"""
