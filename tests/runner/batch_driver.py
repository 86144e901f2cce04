"""A small local batch driver for the tests: answers an OpenAI Batch API requests file.

Reads the input JSONL (``{"custom_id", "method", "url", "body"}`` per line), POSTs each
``body`` to ``BASE + url`` (``BASE`` is the server root, e.g. ``http://127.0.0.1:8080``)
and writes the output JSONL in OpenAI's format, as vLLM's ``run_batch`` does::

    {"id": "batch_req_...", "custom_id": ..., "response": {"status_code": 200,
     "request_id": ..., "body": <chat completion>}, "error": null}

A request the server answers with an HTTP error goes to the errors file (``response``
with its status code and body); one it cannot answer at all gets ``response: null``
and an ``error`` object. Usage: ``python batch_driver.py INPUT OUTPUT ERRORS BASE``.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path


def answer(input_path: Path, output_path: Path, errors_path: Path, base: str,
           *, timeout_s: float = 120.0) -> tuple[int, int]:
    """Answer every request of ``input_path``; (lines written to output, to errors)."""
    out_lines, err_lines = [], []
    for n, raw in enumerate(input_path.read_text(encoding="utf-8").splitlines()):
        if not raw.strip():
            continue
        line = json.loads(raw)
        assert line["method"] == "POST", line["method"]
        req = urllib.request.Request(
            base.rstrip("/") + line["url"], data=json.dumps(line["body"]).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        entry = {"id": f"batch_req_{n:06d}", "custom_id": line["custom_id"],
                 "response": None, "error": None}
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                entry["response"] = {"status_code": resp.status, "request_id": f"req_{n}",
                                     "body": json.loads(resp.read())}
            out_lines.append(entry)
        except urllib.error.HTTPError as exc:
            entry["response"] = {"status_code": exc.code, "request_id": f"req_{n}",
                                 "body": {"error": {"message": exc.read().decode(
                                     "utf-8", "replace")[:300]}}}
            err_lines.append(entry)
        except OSError as exc:
            entry["error"] = {"code": "driver_error", "message": str(exc)}
            err_lines.append(entry)
    for path, lines in ((output_path, out_lines), (errors_path, err_lines)):
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return len(out_lines), len(err_lines)


if __name__ == "__main__":  # pragma: no cover - a manual tool
    a, b = answer(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4])
    print(f"{a} answers, {b} errors")
