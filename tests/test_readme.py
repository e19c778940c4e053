"""The README's example topology runs as written (on the local engine here)."""

import re
from pathlib import Path


def test_readme_example_runs():
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    block = re.search(r"## A first topology\n\n```python\n(.*?)```", readme, re.S).group(1)
    assert 'engine="spark"' in block
    namespace = {}
    exec(compile(block.replace('engine="spark"', 'engine="local"'), "README", "exec"), namespace)
    assert namespace["result"].stats["sentences"]["acked"] == 500
    assert namespace["result"].stats["sentences"]["failed"] == 0
    testing = re.search(r"## Testing your topology\n\n.*?```python\n(.*?)```", readme, re.S)
    exec(compile(testing.group(1), "README", "exec"), namespace)  # uses Split from above
    namespace["test_every_sentence_is_fully_processed"]()


def test_testing_guide_example_runs():
    guide = (Path(__file__).parent.parent / "docs" / "testing.md").read_text()
    block = re.search(r"```python\n(.*?)```", guide, re.S).group(1)
    namespace = {}
    exec(compile(block, "docs/testing.md", "exec"), namespace)
    namespace["test_split_acks_every_sentence"]()


def test_trident_guide_example_runs(capsys):
    guide = (Path(__file__).parent.parent / "docs" / "trident.md").read_text()
    block = re.search(r"```python\n(.*?)```", guide, re.S).group(1)
    exec(compile(block, "docs/trident.md", "exec"), {})
    assert capsys.readouterr().out.strip().endswith("[[3]]")
