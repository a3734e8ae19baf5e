"""The installed package: its version is the C++ project's, the type stubs and py.typed are
there for editors and cover the whole API, and `import optpipe` imports nothing heavy (no torch)."""

import pathlib
import re
import subprocess
import sys

import pytest

import optpipe
from conftest import ROOT


def test_version_is_the_cmake_projects():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    version = re.search(r"project\(optpipe VERSION ([0-9.]+)", cmake).group(1)
    assert optpipe.__version__ == version
    assert optpipe.build.startswith(f"optpipe {version} (")


def test_type_stubs_cover_the_api():
    package = pathlib.Path(optpipe.__file__).parent
    assert (package / "py.typed").exists()
    stub = (package / "_optpipe.pyi").read_text()
    for name in optpipe.__all__:
        if name == "__version__":
            continue
        assert re.search(rf"^(class|def) {name}\b|^{name}: ", stub, re.M), f"{name} is not in the stubs"
    assert "def solve(instance: Instance, *, time_limit: float = 60.0" in stub
    assert "def from_dict(document: dict[str, Any]) -> Instance" in stub
    assert "def timeline(self) -> list[list[tuple[float, float] | None]]" in stub


def test_import_does_not_load_torch():
    code = "import sys, optpipe; print('torch' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.split() == ["False", "False"]


def test_the_root_pyproject_builds_the_same_package():
    """`pip install .` (the root's pyproject.toml) and `pip install ./python` differ only in paths."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    here = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())
    assert root["build-system"] == here["build-system"]
    here["tool"].pop("pytest", None)
    # The paths, seen from the repository root and from python/.
    assert root["project"].pop("readme") == "python/" + here["project"].pop("readme")
    sk_root, sk_here = root["tool"]["scikit-build"], here["tool"]["scikit-build"]
    assert sk_root["cmake"].pop("source-dir") == "." and sk_here["cmake"].pop("source-dir") == ".."
    assert sk_root["wheel"].pop("packages") == ["python/" + p for p in sk_here["wheel"].pop("packages")]
    v_root, v_here = sk_root["metadata"]["version"], sk_here["metadata"]["version"]
    assert v_root.pop("input") == "CMakeLists.txt" and v_here.pop("input") == "../CMakeLists.txt"
    assert root == here
