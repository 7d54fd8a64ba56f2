"""The bus example keeps the newest note per stand-in, whatever order EventBridge uses."""

import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from newest_note import Newest, main  # noqa: E402


def note(task_id, seq, state="TASK_STATE_WORKING", final=False):
    return {"task_id": task_id, "seq": seq, "state": state, "final": final}


class NewestTest(unittest.TestCase):
    def test_late_and_repeated_notes_are_not_news(self):
        newest = Newest()
        taken = [
            newest.take(n)
            for n in [note("a", 1), note("a", 3), note("a", 2), note("a", 3), note("b", 1)]
        ]
        self.assertEqual(taken, [True, True, False, False, True])
        self.assertEqual(newest.seen, {"a": 3, "b": 1})

    def test_events_as_the_bus_delivers_them(self):
        events = [
            {"source": "standin", "detail-type": "TASK_STATE_COMPLETED",
             "detail": note("a", 2, "TASK_STATE_COMPLETED", True)},
            {"source": "standin", "detail-type": "TASK_STATE_INPUT_REQUIRED",
             "detail": note("a", 1, "TASK_STATE_INPUT_REQUIRED")},
            {"source": "standin", "detail-type": "TASK_STATE_COMPLETED",
             "detail": note("a", 2, "TASK_STATE_COMPLETED", True)},
        ]
        out = io.StringIO()
        main([json.dumps(e) for e in events] + [""], out)
        kept = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertEqual([n["seq"] for n in kept], [2], "the late question and the repeat dropped")
        self.assertTrue(kept[0]["final"])


if __name__ == "__main__":
    unittest.main()
