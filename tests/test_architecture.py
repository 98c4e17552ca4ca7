"""The tree's shape: dependencies point one way. A registry asks for its entries; the entries (and the plugin
machinery) do not reach back into it. An import cycle anywhere in memread/ fails here, with the modules and
the import lines that close it, whether the import is at module level, inside a function or under
TYPE_CHECKING: each of those still ties the two modules together for the next person who changes one."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "memread"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {imported memread module: line of the first such import}."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges: dict[str, int] = {}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                # "from memread.x import y": the submodule y when there is one, else the package x itself.
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            for target in targets:
                while target and target not in modules:  # "import memread.a.b" names memread.a.b
                    target = target.rpartition(".")[0]
                if target and target != name and target.startswith("memread"):
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_function_level_and_type_checking_imports() -> None:
    graph = import_graph()
    assert "memread.strategies" in graph["memread.loop"]  # module level
    assert "memread.ingest" in graph["memread.ask"]  # inside a function
    assert "memread.run" in graph["memread"]  # under TYPE_CHECKING (the package's lazy face)
    assert cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [["a", "b", "c"]]


def test_memread_has_no_import_cycle() -> None:
    graph = import_graph()
    problems = []
    for component in cycles(graph):
        lines = [f"{a} -> {b} (line {graph[a][b]})" for a in component for b in component if b in graph[a]]
        problems.append("; ".join(lines))
    assert not problems, "import cycles:\n" + "\n".join(problems)


def test_the_plugin_machinery_imports_no_registry() -> None:
    # Registries (ingest, backends, strategies) hand memread.plugins a function to register with.
    assert set(import_graph()["memread.plugins"]) <= {"memread.registry"}


def test_machine_facts_and_the_model_registry_import_no_backend() -> None:
    # memread.cpu (cores, vector instructions) and memread.models sit below the backends: the llama.cpp backend
    # asks them for a thread count and a model file, never the other way round.
    graph = import_graph()
    upward = [f"{name} -> {target} (line {line})" for name, edges in sorted(graph.items())
              if name == "memread.cpu" or name.startswith("memread.models")
              for target, line in edges.items() if target.startswith("memread.backends")]
    assert not upward, "imports that run up into the backends:\n" + "\n".join(upward)
