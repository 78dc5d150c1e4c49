"""The docs-test helpers: tags, snippets, continuation lines and tiny overrides."""
from __future__ import annotations

from tests.docs.blocks import Block, ROOT, blocks, entry_commands, logical_lines, parse_tag, with_tiny


def test_parse_tag():
    assert parse_tag("run: slow; tiny: a=1 'b=[x, y]'; needs: llm") == ("slow", ["a=1", "b=[x, y]"], ["llm"])
    assert parse_tag("run: no (a server)") == ("no", [], [])
    assert parse_tag("install: the install command") == ("no", [], [])
    assert parse_tag(None) == (None, [], [])


def test_tag_is_the_comment_right_before_the_fence(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("<!-- run: fast -->\n```bash\necho a\n```\n\ntext\n\n```bash\necho b\n```\n"
                    "<!-- run: slow; tiny: x=1 -->\n```python\nprint(1)\n```\n")
    got = [(b.tier, b.lang, b.body, b.tiny) for b in blocks(page)]
    assert got == [("fast", "bash", "echo a", []), (None, "bash", "echo b", []), ("slow", "python", "print(1)", ["x=1"])]


def test_snippets_are_expanded(tmp_path):
    page = tmp_path / "p.md"
    page.write_text('<!-- run: fast -->\n```bash\n--8<-- "examples/prompts.csv"\n```\n')
    (b,) = blocks(page)
    assert b.body == (ROOT / "examples" / "prompts.csv").read_text().rstrip("\n")


def test_tiny_goes_to_every_train_command_only():
    body = ("python train.py a=1 \\\n    b=2   # a comment\npython predict.py mode=score\n"
            "python train.py -m x=1,2 &\necho python train.py")
    out = with_tiny(body, ["data.subtasks=[p,q]", "s=3"]).splitlines()
    assert out[0] == "python train.py a=1      b=2 'data.subtasks=[p,q]' s=3"
    assert out[1] == "python predict.py mode=score"
    assert out[2] == "python train.py -m x=1,2 'data.subtasks=[p,q]' s=3 &"
    assert out[3] == "echo python train.py"
    assert len(logical_lines(body)) == 4


def test_entry_commands():
    b = Block(ROOT / "README.md", 1, "bash", "export X=1\npython train.py -m a=1,2\npython predict.py mode=route \\\n  p=q", "fast")
    assert entry_commands(b) == [("train", "-m a=1,2"), ("predict", "mode=route    p=q")]
