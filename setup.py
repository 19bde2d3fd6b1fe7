"""Builds fastser compiled with mypyc, or pure Python with FASTSER_PURE=1.

Compiled, in one mypyc group (so isinstance checks against the wrappers are pointer
compares, and the shared library has the stable in-package name fastser._native):
every module with hot code. Left interpreted, each for a reason:
  __init__.py  the facade: re-exports, and the COMPILED flag must look at a compiled module
  api.py       public docstrings: mypyc drops them (https://github.com/mypyc/mypyc/issues/437)
  sock.py, aio.py  the same for the adapters' public functions (the work is in transport/)
  errors.py    exceptions with two built-in bases, which native classes cannot have
  frames/address.py  a ctypes Structure (its metaclass cannot be compiled); called only for
               read-only pieces of a split frame (split.py takes writeable ones' addresses)
  __main__.py, cli/  the command line: nothing hot
  */__init__.py  each folder's docstring, nothing else
  dask/        distributed's comm backends and the payload bridge (the dask extra): subclass
               distributed's interpreted classes, and distributed is not a build dependency
"""

import atexit
import os
import shutil
import sys
import tempfile

from setuptools import setup

# A wheel packs whatever the build directory holds: the stale extension of a module that is
# no longer compiled would ship beside its .py and shadow it (seen when sock and aio became
# interpreted facades). So every run of this script builds in a new, empty directory of its
# own under build/ (its lib*, temp*, bdist.* and mypyc's C files), removed when it ends:
# nothing stale can be packed, and two installs from one source folder at once never share
# (or empty) each other's files. Nothing is lost: setuptools recompiles every C file of an
# extension it builds anyway. A --build-base on the command line still wins.
BUILD_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build")
os.makedirs(BUILD_ROOT, exist_ok=True)
BUILD_BASE = tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=BUILD_ROOT)
atexit.register(shutil.rmtree, BUILD_BASE, ignore_errors=True)

COMPILED_MODULES = [
    # the vocabulary
    "fastser/arguments.py",
    "fastser/frame_types.py",
    "fastser/headers.py",
    "fastser/limits.py",
    "fastser/wrappers.py",
    # frames (address.py stays interpreted: see above)
    "fastser/frames/placed.py",
    "fastser/frames/split.py",
    "fastser/frames/cores.py",
    "fastser/frames/adaptive.py",
    "fastser/frames/compression.py",
    "fastser/frames/stream.py",
    # serializer families
    "fastser/families/registry.py",
    "fastser/families/dispatch.py",
    "fastser/families/numpy.py",
    "fastser/families/pickle.py",
    "fastser/families/serialize.py",
    # the codec
    "fastser/codec/wire.py",
    "fastser/codec/packing.py",
    "fastser/codec/marks.py",
    "fastser/codec/tuple_leads.py",
    "fastser/codec/array_records.py",
    "fastser/codec/paths.py",
    "fastser/codec/extract.py",
    "fastser/codec/depth.py",
    "fastser/codec/collisions.py",
    "fastser/codec/header.py",
    "fastser/codec/payload_frames.py",
    "fastser/codec/encoder.py",
    "fastser/codec/decoder.py",
    "fastser/codec/dumps_loads.py",
    # transports
    "fastser/transport/receive_buffer.py",
    "fastser/transport/send_clock.py",
    "fastser/transport/sock.py",
    "fastser/transport/aio.py",
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

    # pip shows a spinner at most while this runs (its -v shows this line): say what the
    # wait is for. Measured once on 2 cores (busy): `time pip install --no-deps .` took 43 s.
    print(f"fastser: compiling {len(COMPILED_MODULES)} modules with mypyc, then C; about "
          "a minute on 2 cores (FASTSER_PURE=1 skips it)", file=sys.stderr, flush=True)
    opt_level = os.environ.get("MYPYC_OPT_LEVEL", "3")
    return mypycify(["--config-file", "mypy.ini", *COMPILED_MODULES],
                    opt_level=opt_level, group_name="fastser._native",
                    target_dir=os.path.join(BUILD_BASE, "mypyc"))


# The egg-info too: setuptools rewrites it through temporary files in its folder (the
# source folder by default), and two installs at once failed on each other's
# ("No such file or directory: 'fastser.egg-info/tmp...'"). An sdist packs that folder
# under its own path, so an sdist keeps it in the source folder.
OPTIONS = {"build": {"build_base": BUILD_BASE}}
if "sdist" not in sys.argv[1:]:
    OPTIONS["egg_info"] = {"egg_base": BUILD_BASE}

setup(ext_modules=extensions(), options=OPTIONS)
