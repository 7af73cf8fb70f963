"""What the console prints after a run: short, aligned, and numbers that visibly add up."""

from __future__ import annotations

from offset_audit.report import DecodeReport


def _n(value: int) -> str:
    return f"{value:,}"


def decode_summary(report: DecodeReport, output: str) -> str:
    lines = [
        f"Decoded {report.input} ({report.input_format})",
        "",
        f"  records read            {_n(report.records_read):>12}",
        f"  skipped (other topic)   {_n(report.records_skipped):>12}",
        f"  decoded                 {_n(report.records_decoded):>12}   of which tombstones {_n(report.tombstones)}",
        f"  unknown types           {_n(report.other_records):>12}   (kept in other_records)",
        f"  quarantined             {_n(report.quarantined):>12}   (see quarantine)",
        "",
        "  decoded by record type and value version:",
    ]
    for t in report.decoded_by_type:
        version = "tombstone" if t.value_version is None else f"v{t.value_version}"
        era = f" [{t.layout_era}]" if t.layout_era and t.value_version is not None else ""
        lines.append(f"    {t.record_type:>3} {t.record_name:<38} {version:<10}{era:<10} {_n(t.records):>12}")
    lines += ["", f"  Delta tables under {output}:"]
    for name, rows in report.table_rows.items():
        lines.append(f"    {name:<22} {_n(rows):>14} rows")
    lines.append(f"    {'runs':<22} {'+1':>14} row (run {report.run_id[:12]})")
    for warning in report.warnings:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines)
