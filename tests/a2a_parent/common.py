"""What the parents here share: a user message and what a task's status says."""

import uuid

from a2a.types import Message, Part, Role


def message(text, task_id=None):
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        m.task_id = task_id
    return m


def said(task):
    parts = task.get("status", {}).get("message", {}).get("parts", [])
    return " ".join(p.get("text", "") for p in parts)
