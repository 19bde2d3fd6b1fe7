"""Builds fastser compiled with mypyc, or pure Python with FASTSER_PURE=1.

Compiled, in one mypyc group (so isinstance checks against the wrappers are pointer
compares, and the shared library has the stable in-package name fastser._native):
every module with hot code. Left interpreted, each for a reason:
  __init__.py  the facade: re-exports, and the COMPILED flag must look at a compiled module
  _facade.py   public docstrings: mypyc drops them (https://github.com/mypyc/mypyc/issues/437)
  sock.py, aio.py  the same for the adapters' public functions (the work is in _sock, _aio)
  _errors.py   exceptions with two built-in bases, which native classes cannot have
  _buffers.py  a ctypes Structure (its metaclass cannot be compiled); called only for read-only
               pieces of a split frame (_split takes writeable ones' addresses itself)
  __main__.py, _demo.py, _inspect.py  the command line: nothing hot
  dask.py, _dask_bridge.py  distributed's comm backends and the payload bridge (the dask
               extra): subclass distributed's interpreted classes, and distributed is not
               a build dependency
"""

import glob
import os
import shutil
import sys

from setuptools import setup

# A wheel packs whatever the build directory holds: the stale extension of a module that is
# no longer compiled would ship beside its .py and shadow it (seen when sock and aio became
# interpreted facades). Start every build from an empty build/lib*; the compiled objects in
# build/temp* are kept, so nothing is recompiled for this.
for stale in glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "build", "lib*")):
    shutil.rmtree(stale, ignore_errors=True)

COMPILED_MODULES = [
    "fastser/_arguments.py",
    "fastser/_types.py",
    "fastser/_wire.py",
    "fastser/_limits.py",
    "fastser/_placed.py",
    "fastser/wrappers.py",
    "fastser/_registry.py",
    "fastser/_dispatch.py",
    "fastser/_numpy.py",
    "fastser/_pickle.py",
    "fastser/_serialize.py",
    "fastser/_packing.py",
    "fastser/_leads.py",
    "fastser/_maps.py",
    "fastser/_split.py",
    "fastser/_compression.py",
    "fastser/_paths.py",
    "fastser/_walk.py",
    "fastser/_depth.py",
    "fastser/_encoder.py",
    "fastser/_frame_refs.py",
    "fastser/_header.py",
    "fastser/_array_records.py",
    "fastser/_marks.py",
    "fastser/_decoder.py",
    "fastser/_codec.py",
    "fastser/_framing.py",
    "fastser/_sock.py",
    "fastser/_aio.py",
]


# Commands that only describe or copy the source (pip asks for them before it builds a
# wheel, and `python -m build` makes the sdist with them): mypyc would run for nothing.
NOT_BUILDING = {"egg_info", "dist_info", "sdist"}


def extensions() -> list:
    if os.environ.get("FASTSER_PURE", "") not in ("", "0"):
        return []
    if sys.argv[1:2] and sys.argv[1] in NOT_BUILDING and not any(
            arg.startswith(("build", "bdist", "install", "develop", "editable"))
            for arg in sys.argv[2:]):
        return []
    from mypyc.build import mypycify

    opt_level = os.environ.get("MYPYC_OPT_LEVEL", "3")
    return mypycify(["--config-file", "mypy.ini", *COMPILED_MODULES],
                    opt_level=opt_level, group_name="fastser._native")


setup(ext_modules=extensions())
