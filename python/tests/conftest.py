"""Shared fixtures of the Python binding tests: the repository's folders, the shipped instances,
and the `optpipe` command built by scripts/build.sh (the reference the bindings are compared
with; $OPTPIPE_CLI picks another binary). Tests that need the command skip, saying why, when it
is not there."""

import os
import pathlib
import subprocess

import pytest

import optpipe

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSTANCES = ROOT / "instances"


def instance_path(name: str) -> pathlib.Path:
    return INSTANCES / f"{name}.json"


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("OPTPIPE_CLI", ROOT / "build" / "optpipe"))
    if not os.access(path, os.X_OK):
        pytest.skip(f"no optpipe command at {path} (scripts/build.sh optpipe, or set OPTPIPE_CLI)")
    return path


def run_cli(cli: pathlib.Path, *args, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the command; stdout and stderr as text."""
    env = dict(os.environ, OPTPIPE_CACHE="off")
    done = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"optpipe {' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="session")
def tiny() -> optpipe.Instance:
    return optpipe.Instance.from_file(instance_path("tiny-2x3"))
