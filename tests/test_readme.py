"""The README and the documentation's guides: their Python examples run as written.

The README is the front page (at most 400 lines, the two commands verbatim, links into
docs/); the longer examples that were once in it live in the guides, docs/guides/*.md, and
run here the same way. An example followed by "which prints" and a plain code block must
print exactly that block.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDES = sorted((ROOT / "docs" / "guides").glob("*.md"))
PYTHON_BLOCK = r"```python\n(.*?)```"
BLOCKS = re.findall(PYTHON_BLOCK, README.read_text(), flags=re.S)
GUIDE_BLOCKS = [
    (guide, block)
    for guide in GUIDES
    for block in re.findall(PYTHON_BLOCK, guide.read_text(), flags=re.S)
]
# the two commands of .ci/run, which greps for these exact lines
COMMANDS = (
    "pip install . && pyprog reproduce --quick --out results",
    'pip install -e ".[test]" && pip install --no-deps simglucose==0.2.11 && pytest',
)


def test_readme_has_examples():
    assert len(BLOCKS) >= 3


def test_readme_is_a_front_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= 400, f"README.md has {len(lines)} lines; move material to docs/guides/"
    for command in COMMANDS:
        assert command in lines, f"README.md no longer reads: {command}"


def test_readme_links_resolve():
    """Every relative link and image of the README points at a file or folder of the checkout."""
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text) + re.findall(r'src="([^"]+)"', text)
    relative = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert any(t.startswith("docs/") for t in relative)
    missing = [t for t in relative if not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_guides_have_examples():
    """The examples moved from the README into the guides: all of them are still run."""
    names = {guide.stem for guide, _ in GUIDE_BLOCKS}
    assert {"forecast", "training", "reproduction"} <= names
    assert len(BLOCKS) + len(GUIDE_BLOCKS) >= 13


def test_guides_link_to_existing_files():
    """Images and downloads of the guides (paths relative to docs/guides/) exist."""
    missing = []
    for guide in GUIDES:
        text = guide.read_text()
        targets = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
        targets += re.findall(r"\{download\}`[^`<]*<([^>]+)>`", text)
        missing += [f"{guide.name}: {t}" for t in targets if not (guide.parent / t).exists()]
    assert not missing, missing


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, capsys):
    exec(compile(BLOCKS[index], f"README.md example {index + 1}", "exec"), {})
    assert capsys.readouterr().out.strip() != "" or "print(" not in BLOCKS[index]


@pytest.mark.parametrize(
    "guide, block",
    GUIDE_BLOCKS,
    ids=[f"{guide.stem}-{i + 1}" for i, (guide, _) in enumerate(GUIDE_BLOCKS)],
)
def test_guide_example_runs(guide, block, capsys):
    exec(compile(block, f"{guide.relative_to(ROOT)} example", "exec"), {})
    out = capsys.readouterr().out
    assert out.strip() != "" or "print(" not in block
    text = guide.read_text()
    after = text[text.index(block) + len(block) :]
    printed = re.match(r"```\n\s*which prints\s*\n\s*```\n(.*?)```", after, flags=re.S)
    if printed:
        assert out == printed.group(1)


def test_readme_auto_example_interval_holds_its_truth():
    """Issue 32: the README's ``basis="auto"`` example prints an interval that contains the
    truth it prints beside it (the mean of the sinusoid over the next 5 episodes)."""
    (block,) = [b for b in BLOCKS if "truth = np.sin" in b]
    scope: dict = {}
    exec(compile(block, "README.md auto example", "exec"), scope)
    f, truth = scope["f"], scope["truth"]
    assert f.low <= truth <= f.high, (f, truth)
    assert truth == pytest.approx(0.0835, abs=1e-4)
    assert (round(f.value, 3), round(f.low, 2), round(f.high, 3)) == (-0.423, -1.14, 0.37)
