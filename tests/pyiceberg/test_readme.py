"""The README's PyIceberg quick start, run as written against the real server."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_quick_start_runs_as_written(server_url):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL)
    assert len(blocks) == 1, "the README has one PyIceberg quick start"
    code = blocks[0].replace("http://127.0.0.1:8080", server_url)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().split() == ["2", "3", "3"]
