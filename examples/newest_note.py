"""Reading the stand-in's notes from EventBridge: at least once, in no order.

EventBridge promises neither order nor a single delivery (a failed delivery to a target
is retried for up to 24 hours), so a rule's target may see a stand-in's note 3 before its
note 2, or note 2 twice. Every note carries its stand-in's `task_id` and a `seq` that
grows by one per note, and its `final` flag: keep the newest `seq` per stand-in and act
on a note only when it is newer. The parent's SQS FIFO queue is the ordered channel;
this is for parents that route notes with rules.

    python examples/newest_note.py < events.jsonl   # prints the notes worth acting on
"""

import json
import sys


class Newest:
    """The newest note seen per stand-in; `take` says whether a note is news."""

    def __init__(self):
        self.seen = {}

    def take(self, note):
        """True when `note` is newer than every note of its stand-in seen so far."""
        task_id, seq = note["task_id"], note["seq"]
        if seq <= self.seen.get(task_id, 0):
            return False
        self.seen[task_id] = seq
        return True


def main(lines, out):
    newest = Newest()
    for line in lines:
        line = line.strip()
        if not line:
            continue
        event = json.loads(line)
        note = event.get("detail", event)
        if newest.take(note):
            out.write(json.dumps(note) + "\n")


if __name__ == "__main__":
    main(sys.stdin, sys.stdout)
