"""What `--json` prints: one JSON document per command, for jq, CI and schedulers.

The same numbers as the printed summary, plus what a script needs to find the results again: the run
and snapshot ids, the output folder and every table written with its rows and Delta version. Times
are ISO-8601 in UTC with a Z; names from the dump are plain JSON strings (json escapes them).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from offset_audit.escaping import json_text
from offset_audit.storage import join

if TYPE_CHECKING:
    from offset_audit.decoding.report import DecodeReport  # the run's counts: these views only read them


def iso(value: Any) -> Any:
    if isinstance(value, datetime):
        text = value.isoformat().replace("+00:00", "Z")
        return text if value.tzinfo else text + "Z"
    return value


def dumps(document: dict | None) -> str:
    """The document as JSON text, names from the dump as readable as JSON allows and inert in a terminal
    (escaping.json_text)."""
    return json_text(json.dumps(document, indent=2, default=iso, ensure_ascii=False, sort_keys=False))


def _sum_known(values) -> int | None:
    """The sum of the values that are not None; None when none is known."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _counts(report: DecodeReport) -> dict:
    return {
        "records_read": report.records_read,
        "skipped": report.records_skipped,
        "skipped_by_reason": dict(sorted(report.skipped_by_reason.items())),
        "decoded": report.records_decoded,
        "tombstones": report.tombstones,
        "unknown_types": report.other_records,
        "quarantined": report.quarantined,
        "unreadable_bytes_skipped": report.bytes_skipped,
        "reconciles": report.reconciles,
        "format_notes": dict(sorted(report.format_notes.items())),
    }


def _tables(report: DecodeReport, output: str) -> dict:
    return {
        name: {"path": join(output, name), "rows": rows, "version": report.table_versions.get(name)}
        for name, rows in report.table_rows.items()
    }


def _run(report: DecodeReport, output: str) -> dict:
    return {
        "command": report.command,
        "run_id": report.run_id,
        "input": report.input,
        "input_format": report.input_format,
        "output": output,
        "started_at": iso(report.started_at),
        "finished_at": iso(report.finished_at),
        # The cluster judged (audit, whatif, history): null where neither the input nor --cluster named one.
        "cluster": report.cluster or None,
        "cluster_id": report.cluster_id,
        "warm_session": report.warm_session,
        **({"upkeep": report.upkeep} if report.upkeep is not None else {}),
    }


def decode_document(report: DecodeReport, output: str) -> dict:
    return {
        **_run(report, output),
        "counts": _counts(report),
        "decoded_by_type": [
            {
                "record_type": t.record_type,
                "record_name": t.record_name,
                "value_version": t.value_version,
                "layout_era": t.layout_era,
                "records": t.records,
                "tombstones": t.tombstones,
            }
            for t in report.decoded_by_type
        ],
        "tables": _tables(report, output),
    }


def audit_document(result: Any, output: str, alerts: dict | None = None) -> dict:
    report = result.report
    return {
        **_run(report, output),
        "snapshot_id": result.snapshot_id,
        "as_of": iso(result.as_of),
        "retention_minutes": report.retention_minutes,
        "counts": _counts(report),
        "groups": [
            {"group_type": t, "group_state": s, "would_delete": d, "groups": n} for t, s, d, n in result.group_summary
        ],
        "offsets": {
            "total": result.offsets,
            "expired": result.expired,
            "expire_within_24h": result.expiring_24h,
            "expire_in_1_to_7_days": result.expiring_1_to_7d,
            "expire_later": result.expiring_later,
            "no_expiry": result.not_expiring,
            "expired_in_active_groups": result.expired_in_active_groups(),
        },
        "top_deletion_candidates": result.top_candidates,
        **(
            {
                "state": {
                    "used": report.state,
                    "reason": report.state_reason,
                    "records_carried": report.records_carried,
                    "records_new": report.records_read - report.records_carried,
                    "records_appended_to_log": report.records_logged,
                }
            }
            if report.state is not None
            else {}
        ),
        "alerts": alerts or {},
        "tables": _tables(report, output),
    }


def whatif_document(report: DecodeReport, rows: list[dict], output: str) -> dict:
    return {
        **_run(report, output),
        "snapshot_id": report.snapshot_id,
        "counts": _counts(report),
        "scenarios": [{k: iso(v) for k, v in row.items()} for row in rows],
        "tables": _tables(report, output),
    }


def share_document(result: Any, output: str) -> dict:
    report = result.report
    parts = result.partitions
    severities: dict[str, int] = {}
    for finding in result.findings:
        severities[finding["severity"]] = severities.get(finding["severity"], 0) + 1
    return {
        **_run(report, output),
        "counts": _counts(report),
        "share_partitions": len(parts),
        "share_groups": len(result.groups),
        "left_behind_groups": sorted(g["group_id"] for g in result.groups if g.get("left_behind")),
        "in_flight": {
            name: sum(p.get(name) or 0 for p in parts)
            for name in (
                "available_records",
                "acknowledged_records",
                "archived_records",
                "archiving_records",
                "records_at_delivery_limit",
            )
        },
        "share_lag": sum(p.get("share_lag") or 0 for p in parts) if any(p.get("share_lag") for p in parts) else None,
        "broker_lag": _sum_known(p.get("broker_lag") for p in parts),
        "findings_by_severity": dict(sorted(severities.items())),
        "findings": [{k: iso(v) for k, v in f.items()} for f in result.findings if f["severity"] != "info"],
        "tables": _tables(report, output),
    }


def warm_status_document(status: dict) -> dict:
    """`warm status --json`: the session's answer, its start (epoch seconds between the processes) as
    the ISO time every other document gives."""
    return {**status, "started": iso(datetime.fromtimestamp(status["started"], UTC))}


def delete_plan_document(audit_dir: str, snapshot_id: str, candidates: list[dict], script: str | None) -> dict:
    groups: dict[str, dict[str, list[int]]] = {}
    for c in candidates:
        groups.setdefault(c["group_id"], {}).setdefault(c["topic"], []).append(c["partition"])
    return {
        "command": "delete-plan",
        "audit": audit_dir,
        "snapshot_id": snapshot_id,
        "script": script,
        "partitions": len(candidates),
        "groups": [
            {"group_id": g, "topics": [{"topic": t, "partitions": sorted(p)} for t, p in sorted(topics.items())]}
            for g, topics in groups.items()
        ],
        "candidates": [{k: iso(v) for k, v in c.items()} for c in candidates],
    }


def history_document(result: Any, output: str) -> dict:
    report = result.report
    bound = result.retention
    return {
        **_run(report, output),
        "snapshot_id": result.snapshot_id,
        "retention_minutes": result.retention_minutes,
        **(
            {
                "kept_log": {
                    "log_generation": result.kept.generation,
                    "generations": sorted(result.kept.log.files),
                    "records_appended": result.kept.records,
                }
            }
            if result.kept is not None
            else {}
        ),
        "counts": _counts(report),
        "events": [
            {"event": event, "cause": cause, "rows": rows}
            for (event, cause), rows in sorted(result.events_by_kind.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
        ],
        "consistent_retention_minutes": {
            "low": bound.low,
            "high": bound.high,
            "swept_tombstones": bound.tombstones,
            "consistent": bound.consistent,
            "low_set_by": bound.low_by,
            "high_set_by": bound.high_by,
        },
        "reach": [{k: iso(v) for k, v in r.items() if not k.endswith("_ms")} for r in result.reach],
        "timeline": [{k: iso(v) for k, v in e.items()} for e in result.timeline],
        "tables": _tables(report, output),
    }
