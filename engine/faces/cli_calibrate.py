"""`kgqa calibrate`: fit a KGFR checkpoint's confidence and the threshold below which it declines,
from `kgqa eval` reports of questions the KG answers and of questions it cannot answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from kgqa.faces.cli_common import fail, out


def _rows(paths: list[Path], answerable: bool) -> list[dict]:
    rows = []
    for path in paths:
        file = path / "eval.json" if path.is_dir() else path
        try:
            report = json.loads(file.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            fail(f"{file}: not a kgqa eval report ({exc})")
        if report.get("topics") == "gold":
            fail(f"{file}: made with --topics gold; calibrate on linked topics, as questions are asked")
        for i, row in enumerate(report.get("rows", [])):
            if not row.get("signals"):
                fail(f"{file}: row {i} ({row.get('qid')}) has no confidence signals: evaluate with --method kgfr and no --llm")
            rows.append({**row, "answerable": answerable})
    return rows


def calibrate(
    checkpoint: Annotated[Path, typer.Option("--checkpoint", help="The checkpoint folder the reports were made with; calibration.json is written there")],
    answerable: Annotated[list[Path], typer.Option("--answerable", help="eval report (folder or eval.json) of validation questions the KG answers; repeatable")],
    unanswerable: Annotated[Optional[list[Path]], typer.Option("--unanswerable", help="eval report of questions the KG cannot answer (e.g. another KG's); repeatable")] = None,
    answer_rate: Annotated[float, typer.Option("--answer-rate", min=0.5, max=1.0, help="Share of answerable questions still answered at the threshold")] = 0.97,
) -> None:
    """Fit the confidence of KGFR answers and their answerability (logistic models over a few signals)
    and choose the answerability threshold below which `kgqa ask`/the service decline. Make the reports with
    `kgqa eval FILE --checkpoint DIR --decline-below 0 --out REPORT`."""
    from kgqa.methods.kgfr.confidence import curve_table, fit_rows

    if not (checkpoint / "config.json").exists():
        fail(f"--checkpoint {checkpoint}: no KGFR checkpoint there (config.json missing)")
    rows = _rows(answerable, True) + _rows(unanswerable or [], False)
    try:
        calibration = fit_rows(rows, answer_rate, {"reports": [str(p) for p in [*answerable, *(unanswerable or [])]]}, checkpoint)
    except (ValueError, KeyError) as exc:
        fail(f"cannot calibrate: {exc}")
        return
    out.print(curve_table(calibration, rows), highlight=False, markup=False)
    written = calibration.save(checkpoint)
    out.print(f"threshold {calibration.threshold:.3f} keeps {answer_rate:.0%} of the answerable questions whose topic was linked answered "
              f"(measured on the questions it was fitted on); wrote {written}")
