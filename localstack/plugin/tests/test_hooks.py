"""LocalStack runs a hook only if the package's entry points name it."""

import re
import tomllib
import unittest
from pathlib import Path

PLUGIN = Path(__file__).resolve().parent.parent


class HooksTest(unittest.TestCase):
    def test_every_infra_start_hook_is_named_in_the_entry_points(self):
        project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
        named = set(project["entry-points"]["localstack.hooks.on_infra_start"].values())
        written = set()
        for source in (PLUGIN / "standin_localstack").glob("*.py"):
            text = source.read_text()
            for name in re.findall(r"@hooks\.on_infra_start\(\)\s*\ndef (\w+)", text):
                written.add(f"standin_localstack.{source.stem}:{name}")
        self.assertTrue(written, "the plugin has hooks")
        self.assertEqual(written - named, set(), "hooks LocalStack would never run")
        self.assertEqual(named - written, set(), "entry points naming no hook")


if __name__ == "__main__":
    unittest.main()
