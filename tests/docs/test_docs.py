"""README.md and docs/*.md: every command runs as written.

Default tier: every shell/Python block is tagged (see blocks.py), every ``train.py`` and
``predict.py`` command composes with Hydra (overrides parse, groups and keys exist), the
README's config-group table lists every folder in conf/, relative links resolve, the site
builds with ``mkdocs build --strict``, and the ``run: fast`` blocks run.
Slow tier: the ``run: slow`` blocks of each page run in order, in one working directory.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import PAGES, ROOT, TESTED_LANGS, all_blocks, blocks, entry_commands, with_tiny

BLOCKS = all_blocks()
TAGGED = [b for b in BLOCKS if b.lang in TESTED_LANGS]


def test_every_block_says_how_it_is_tested():
    untagged = [b.id for b in TAGGED if b.tier not in ("fast", "slow", "no")]
    assert not untagged, f"code blocks without <!-- run: fast|slow|no (why) -->: {untagged}"


# ------------------------------------------------------------------ commands compose
def _argv(rest: str) -> list[str]:
    """The arguments bash would pass (variables and $(...) expanded; comments and & dropped)."""
    script = f"set -- {rest.rstrip().removesuffix('&')}\nprintf '%s\\0' \"$@\""
    env = {**os.environ, "SERVE_PORT": "8000", "LLM_PORT": "8080", "ASSESSORS_MODEL_URI": "runs:/0/assessor"}
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    return [a for a in r.stdout.split("\0") if a]


def _first_of_sweeps(overrides: list[str]) -> list[str]:
    """One job of a ``-m`` sweep: the first value of every sweep override."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    out = []
    for raw, o in zip(overrides, OverridesParser.create().parse_overrides(overrides)):
        if o.is_sweep_override():
            first = next(iter(o.sweep_string_iterator()))
            out.append(f"{o.get_key_element()}={first}")
        else:
            out.append(raw)
    return out


COMMANDS = [(b, app, rest) for b in TAGGED if b.shell for app, rest in entry_commands(b)]


@pytest.mark.parametrize("block,app,rest", COMMANDS, ids=[f"{b.id}:{app}" for b, app, _ in COMMANDS])
def test_command_composes(block, app, rest, tmp_path):
    from hydra import compose, initialize_config_dir

    argv = _argv(rest)
    if "--help" in argv or "-h" in argv:
        return
    if "hydra/launcher=ray_local" in argv:
        pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="the ray extra is not installed")
    multirun = any(a in ("-m", "--multirun") for a in argv)
    overrides = [a for a in argv if a not in ("-m", "--multirun")]
    overrides = _first_of_sweeps(overrides) if multirun else overrides
    # as documented, and with the block's tiny overrides that the slow tier appends
    variants = [overrides] + ([overrides + block.tiny] if app == "train" and block.tiny else [])
    for ov in variants:
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            cfg = compose(config_name=app, overrides=ov, return_hydra_config=True)
        assert cfg.get("task") is not None


# ------------------------------------------------------------------ README structure
def test_readme_config_table_lists_every_group():
    text = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `conf/([\w/]+?)/?` \| (.*?) \|", text, re.M)
    listed = {group for group, _ in rows}
    groups = {p.name for p in (ROOT / "conf").iterdir() if p.is_dir()}
    assert groups <= listed, f"conf/ groups missing from the README's configuration table: {sorted(groups - listed)}"
    assert listed <= groups, f"README lists config groups that do not exist: {sorted(listed - groups)}"
    for group, packages in rows:
        for pkg in re.findall(r"`(assessors/[\w/.]+)`", packages):
            assert (ROOT / pkg).exists(), f"conf/{group}: {pkg} does not exist"


def test_readme_is_a_short_guide():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 210
    for history in ("earlier session", "issue ", "before 20", "+experiment"):
        assert history not in text, f"README holds change history: {history!r} (it belongs in CHANGELOG.md)"


@pytest.mark.parametrize("page", [ROOT / "README.md", ROOT / "CHANGELOG.md"], ids=lambda p: p.name)
def test_relative_links_resolve(page):
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text())
    broken = [l for l in links if "://" not in l and not (page.parent / l).exists()]
    assert not broken, f"{page.name}: broken links {broken}"


def test_mkdocs_build_strict(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (tmp_path / "site" / "results" / "index.html").exists()


# ------------------------------------------------------------------ running blocks
def workdir(tmp: Path) -> Path:
    """A directory laid out like the repository root (outputs/ go here, not into the clone)."""
    for name in ("conf", "examples", "assessors", "datasets", "benchmarks"):
        (tmp / name).symlink_to(ROOT / name)
    for name in ("train.py", "predict.py"):
        shutil.copy(ROOT / name, tmp / name)
    return tmp


def block_env() -> dict:
    from tests.onboarding.llama_server import free_port

    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") and k not in ("PORT", "HOST")}
    # free loopback ports for the servers the examples start (SERVE_PORT: predict.py serve, LLM_PORT:
    # llama-cpp). Not PORT: llama_cpp.server reads PORT from the environment over its --port option.
    env.update(SERVE_PORT=str(free_port()), LLM_PORT=str(free_port()), PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               MPLBACKEND="Agg")
    env.setdefault("ASSESSORS_DATA_DIR", str(ROOT.parent / "shared" / "data"))
    return env


def run_block(block, cwd: Path, env: dict, timeout: int = 3600) -> subprocess.CompletedProcess:
    """Run one block; a shell block's exported variables are written back into ``env``
    (the blocks of a page share one shell session, as a reader's terminal would)."""
    env_file = cwd / ".block_env"
    if block.shell:
        script = with_tiny(block.body, block.tiny) + f"\nenv -0 > {shlex.quote(str(env_file))}\n"
        cmd = ["bash", "-euo", "pipefail", "-c", script]
    else:
        cmd = [sys.executable, "-c", block.body]
    # own process group: a server started in the block with & is stopped with it
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{block.id} timed out after {timeout} s\n{out[-3000:]}\n{err[-3000:]}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    if block.shell and proc.returncode == 0 and env_file.exists():
        exported = dict(kv.split("=", 1) for kv in env_file.read_text().split("\0") if "=" in kv)
        env.clear()
        env.update({k: v for k, v in exported.items() if k not in ("SHLVL", "_", "PWD", "OLDPWD")})
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _skip_reason(block) -> str | None:
    if "llm" in block.needs:
        from tests.onboarding.llama_server import llama_cpp_missing

        return llama_cpp_missing()
    return None


def run_page(page: Path, tier: str, tmp_path: Path) -> None:
    todo = [b for b in blocks(page) if b.lang in TESTED_LANGS and b.tier == tier]
    if not todo:
        pytest.skip(f"{page.name} has no '{tier}' blocks")
    cwd, env = workdir(tmp_path), block_env()
    for b in todo:
        reason = _skip_reason(b)
        if reason:
            pytest.skip(f"{b.id}: {reason}")
        r = run_block(b, cwd, env)
        assert r.returncode == 0, f"{b.id} failed ({r.returncode})\n--- stdout\n{r.stdout[-4000:]}\n--- stderr\n{r.stderr[-6000:]}"


FAST_PAGES = [p for p in PAGES if any(b.tier == "fast" for b in blocks(p))]
SLOW_PAGES = [p for p in PAGES if any(b.tier == "slow" for b in blocks(p))]


@pytest.mark.parametrize("page", FAST_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fast_blocks_run(page, tmp_path):
    run_page(page, "fast", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("page", SLOW_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_slow_blocks_run(page, tmp_path):
    run_page(page, "slow", tmp_path)
