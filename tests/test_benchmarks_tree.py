"""benchmarks/ stays navigable: every script is listed in its README under "run this when…", scripts import
nothing from tests/ and touch no sys.path, and the links of the benchmark READMEs resolve."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
READMES = [BENCHMARKS / "README.md", BENCHMARKS / "results" / "bench" / "README.md",
           BENCHMARKS / "results" / "archive" / "README.md"]


def _scripts() -> list[Path]:
    return sorted(path for pattern in ("*/*.py", "*/*.sh") for path in BENCHMARKS.glob(pattern)
                  if path.name != "__init__.py" and path.parent.name != "results")


def test_every_benchmark_script_is_listed_in_the_benchmarks_readme() -> None:
    readme = (BENCHMARKS / "README.md").read_text(encoding="utf-8")
    scripts = _scripts()
    assert len(scripts) >= 20
    missing = [str(path.relative_to(BENCHMARKS)) for path in scripts
               if f"]({path.relative_to(BENCHMARKS).as_posix()})" not in readme]
    assert missing == []


def test_no_script_sits_at_the_top_of_benchmarks() -> None:
    assert sorted(path.name for path in BENCHMARKS.glob("*.py")) == ["__init__.py"]
    assert list(BENCHMARKS.glob("*.sh")) == []


def test_no_benchmark_imports_the_tests_or_changes_sys_path() -> None:
    offending = []
    for path in BENCHMARKS.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(name == "tests" or name.startswith(("tests.", "docbuilders", "test_")) for name in names):
                offending.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {names}")
            if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", None) == "sys":
                offending.append(f"{path.relative_to(ROOT)}:{node.lineno} uses sys.path")
    assert offending == []


def test_the_benchmark_readmes_link_to_files_that_exist() -> None:
    broken = []
    for readme in READMES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme.read_text(encoding="utf-8")):
            if not target.startswith(("http://", "https://")) and not (readme.parent / target).exists():
                broken.append(f"{readme.relative_to(ROOT)} → {target}")
    assert broken == []
