"""Faults in Lambda's delivery of invocations, for tests: what production's asynchronous
invoke can do to an event (deliver it late, twice, or not at all), done where it happens
here, in the local Lambda service, not in the function's code.

Tests drop rule files (JSON) into the folder named by STANDIN_INVOKE_FAULTS:
    {"function": "ParkFunction", "match": "<text in the payload>",
     "action": "delay" | "twice" | "drop", "seconds": 5, "times": 1}
A rule applies to invocations of functions whose name contains `function` and whose
payload contains `match`, at most `times` times. Without the variable nothing changes."""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

LOG = logging.getLogger(__name__)
_used: dict[str, int] = {}
_lock = threading.Lock()


@dataclass
class Fault:
    action: str
    seconds: float


def fault_for(function_name: str, payload: bytes | str) -> Fault | None:
    """The fault to apply to this invocation, counted as used; None for a normal one."""
    folder = os.environ.get("STANDIN_INVOKE_FAULTS")
    if not folder or not Path(folder).is_dir():
        return None
    text = payload.decode(errors="replace") if isinstance(payload, bytes) else payload
    for path in sorted(Path(folder).glob("*.json")):
        try:
            rule = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a rule being written; the next invocation sees it whole
        if rule.get("function", "") not in function_name or rule.get("match", "") not in text:
            continue
        with _lock:
            used = _used.get(str(path), 0)
            if used >= int(rule.get("times", 1)):
                continue
            _used[str(path)] = used + 1
        LOG.warning("injecting invoke fault %s from %s into %s", rule.get("action"), path.name, function_name)
        return Fault(action=str(rule.get("action", "")), seconds=float(rule.get("seconds", 0)))
    return None
