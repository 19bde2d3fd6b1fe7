"""python -m fastser: the command line.

  demo          round-trip a realistic message and say what happened (the README's main job)
  inspect FILE  describe the messages of a pack_frames stream (FILE or - for stdin), safely
  version       fastser's version, build, and the versions of what it uses
"""

import sys

USAGE = "usage: python -m fastser demo | inspect FILE | version"


def version() -> int:
    from importlib import metadata

    from fastser import COMPILED, __version__
    print(f"fastser {__version__} ({'compiled with mypyc' if COMPILED else 'pure Python'}), "
          f"Python {sys.version.split()[0]}")
    for package in ("msgpack", "cloudpickle", "numpy", "lz4", "zstandard"):
        try:
            found = metadata.version(package)
        except metadata.PackageNotFoundError:
            found = "not installed"
        print(f"  {package}: {found}")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["demo"] and len(argv) == 1:
        from fastser.cli.demo import main as demo
        return demo()
    if argv[:1] == ["inspect"] and len(argv) == 2:
        from fastser.cli.inspect import main as inspect
        return inspect(argv[1])
    if argv == ["version"]:
        return version()
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
