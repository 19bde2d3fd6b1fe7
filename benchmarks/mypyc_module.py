"""A benchmark's helper module compiled with mypyc in a temporary directory (floors.py's bare
walk, c_first.py's scan): what a mypyc loop costs, measured beside fastser's own code."""

import importlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Optional

HERE = Path(__file__).resolve().parent


def compiled_module(name: str) -> tuple[ModuleType, Optional[str]]:
    """benchmarks/<name>.py compiled with mypyc, and None; where mypyc is missing or fails,
    the interpreted module and why (mypyc's output is printed)."""
    if importlib.util.find_spec("mypyc") is None:
        return importlib.import_module(name), "mypyc is not installed (the bench extra has it)"
    with tempfile.TemporaryDirectory(prefix=f"fastser-{name}-") as build:
        shutil.copy(HERE / f"{name}.py", build)
        done = subprocess.run([sys.executable, "-m", "mypyc", f"{name}.py"], cwd=build,
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"note: mypyc failed on {name}.py:\n{done.stdout}{done.stderr}")
            return importlib.import_module(name), "mypyc failed"
        sys.path.insert(0, build)
        try:
            module = importlib.import_module(name)  # the extension: loaded, it needs its file no more
        finally:
            sys.path.remove(build)
    if module.__file__ is None or module.__file__.endswith(".py"):
        raise RuntimeError(f"{name} was not compiled: {module.__file__}")
    return module, None
