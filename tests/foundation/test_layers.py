"""The layout's dependency rule: every rlexp import points down the layer list, none points up.

The walk reads every module's source (imports inside functions included, and the module names
given to ``importlib.import_module`` as string literals or f-strings), so a hidden upward tie fails
here rather than in a reader's head. The same walk checks the size limits of the clean-layers
issue: no module over 400 lines and no function over 80, except the sandbox's one phrase table
written as code (``constraints.violate``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "rlexp"

# Top to bottom; a module may import its own package and anything in a lower layer. Packages that
# share a layer are independent of each other. The README's layout lists the same order.
LAYERS: list[tuple[str, ...]] = [
    ("cli",),  # `rlexp <task|command>`
    ("commands",),  # non-Hydra commands (store, lineage, judge)
    ("tasks",),  # one Hydra app per task
    ("inputs",),  # the one place that builds a task's inputs
    # execute: a record per run; jobs run as their inputs' records appear; the study's memory of its steps
    ("runtime", "job_graph"),
    ("slurm_dispatch",),  # each study step as a SLURM job (submitit)
    ("step_ledger",),
    ("tracking",),  # Weights & Biases
    ("downstream",),  # sampling pools, Best-of-N maths, the PPO adapter
    ("scoring",),  # scorers: reward models, judges, planners
    ("models",),  # lineages, tiny models, loading, RM training
    ("benchmarks", "analysis", "sandbox"),  # benchmark maths, statistics and report, the world
    ("suite",),  # RewardBench 2's downstream tasks: data, prompt regimes, library graders
    ("scorer",),  # the scorer contract
    ("data",),  # schemas, loaders, mixes, formatting
    ("store", "config"),  # records; typed config schemas
    # one-line errors; secrets by key and value pattern; files cut short; what a record id hashes
    ("errors", "redaction", "integrity", "record_hash"),
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}

# Modules allowed over the size limits (tables of data); none today.
SIZE_EXEMPT: set[str] = set()
FUNCTION_EXEMPT = {("sandbox/constraints.py", "violate")}  # one branch per constraint kind
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 80


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    base = PACKAGE.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _dynamic_target(call: ast.Call) -> str | None:
    """The module ``import_module(...)`` / ``__import__(...)`` loads, up to its first placeholder."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value).rstrip(".")
    return None


def _absolute(node: ast.ImportFrom, package: str) -> str | None:
    """The absolute module of a ``from ... import``; relative imports resolve against ``package``."""
    if not node.level:
        return node.module
    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*parts, node.module] if node.module else parts)


def imports(path: Path, package: str = "rlexp") -> list[tuple[int, str]]:
    """(line, imported rlexp module) for every import in ``path``, at any depth (``package``: the
    package ``path`` is in, for relative imports)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("rlexp")]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            if not module or not module.startswith("rlexp"):
                continue
            subs = [f"{module}.{a.name}" for a in node.names if _is_module(f"{module}.{a.name}")]
            found += [(node.lineno, m) for m in subs] or [(node.lineno, module)]
        elif isinstance(node, ast.Call):
            target = _dynamic_target(node)
            if target and target.startswith("rlexp"):
                found.append((node.lineno, target))
    return found


def _layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "rlexp"


def upward_edges() -> list[str]:
    """Every import that points to the same or a higher layer of another package."""
    bad = []
    for path in _modules():
        name = _name(path)
        src = _layer_of(name)
        if src == "rlexp":  # the package's own __init__
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for line, target in imports(path, package):
            dst = _layer_of(target)
            if dst == src:
                continue
            if dst not in RANK or src not in RANK or RANK[dst] <= RANK[src]:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({src}) imports {target} ({dst})")
    return bad


def test_every_package_has_a_layer() -> None:
    packages = {p.relative_to(PACKAGE).parts[0].removesuffix(".py") for p in _modules()} - {"__init__"}
    assert packages <= set(RANK), f"packages without a layer: {sorted(packages - set(RANK))}"


def test_no_import_points_up() -> None:
    assert upward_edges() == []


def test_the_walk_sees_function_level_and_dynamic_imports(tmp_path: Path) -> None:
    # The checker itself: an import inside a function and an f-string import_module are edges.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib\n"
        "from importlib import import_module\n"
        "def f(task):\n"
        "    from rlexp.tasks import bon\n"
        "    from ..tasks import ppo\n"
        "    import_module('rlexp.inputs')\n"
        "    return importlib.import_module(f'rlexp.tasks.{task}')\n"
    )
    found = sorted(imports(probe, "rlexp.models"))
    assert found == [(4, "rlexp.tasks.bon"), (5, "rlexp.tasks.ppo"), (6, "rlexp.inputs"), (7, "rlexp.tasks")]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_and_function_sizes(path: Path) -> None:
    rel = str(path.relative_to(PACKAGE))
    text = path.read_text()
    if rel not in SIZE_EXEMPT:
        assert text.count("\n") <= MAX_MODULE_LINES, f"{rel} has {text.count(chr(10))} lines"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (rel, node.name) not in FUNCTION_EXEMPT:
            length = node.end_lineno - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{rel}:{node.lineno} {node.name} has {length} lines"
