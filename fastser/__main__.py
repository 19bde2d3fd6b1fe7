"""python -m fastser: the command line.

  demo          round-trip a realistic message and say what happened (the README's main job)
  inspect FILE  describe the messages of a pack_frames stream (FILE or - for stdin), safely
  version       fastser's version, build, and the versions of what it uses
  help          this help, or a command's (also -h, --help, and no arguments at all)
"""

import argparse
import io
import os
import sys
from collections.abc import Callable
from typing import Optional

PROG = "python -m fastser"
USAGE = f"usage: {PROG} demo | inspect FILE | version"


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


def demo() -> int:
    from fastser.cli.demo import main as run_demo
    return run_demo()


def inspect(path: str) -> int:
    from fastser.cli.inspect import main as run_inspect
    return run_inspect(path)


def parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command line's parser, and each command's."""
    top = argparse.ArgumentParser(
        prog=PROG, usage=USAGE.removeprefix("usage: "),
        description="fastser's command line: try it, look inside a stream, say what is "
                    "installed.",
        epilog=f"'{PROG} COMMAND --help' (or '{PROG} help COMMAND') describes a command.")
    commands = top.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    found: dict[str, argparse.ArgumentParser] = {}
    found["demo"] = commands.add_parser(
        "demo", prog=f"{PROG} demo", help="round-trip a realistic message and say what happened",
        description="Round-trip a realistic Dask-like message (a numpy array, raw bytes, a "
                    "pickled callable, tuple keys, a 71-bit int) through dumps and loads, "
                    "and show its frames, whether the array was copied, and the time taken. "
                    "Exits with status 1 if the round trip was not equal.")
    inspect_parser = commands.add_parser(
        "inspect", prog=f"{PROG} inspect",
        help="describe each message of a pack_frames stream, safely",
        description="Print each message of a stream written with pack_frames (the frames of "
                    "dumps, each behind its prelude): its frame sizes, wire version, and the "
                    "message as text, with each payload's serializer, type, compression and "
                    "frame sizes. It reads through the safe decoder: nothing is unpickled "
                    "or deserialized.",
        epilog="Exit status: 0 when every message was read; 2, after one line on stderr, "
               "for input that is not a fastser stream, is truncated, or holds a message "
               "that is corrupt or beyond the default Limits.")
    inspect_parser.add_argument("file", metavar="FILE",
                                help="the stream: a file, or - for standard input")
    found["inspect"] = inspect_parser
    found["version"] = commands.add_parser(
        "version", prog=f"{PROG} version",
        help="fastser's version and build, and the versions of what it uses",
        description="Print fastser's version, whether this build is compiled with mypyc or "
                    "pure Python, and the versions of msgpack, cloudpickle, numpy, lz4 and "
                    "zstandard (or 'not installed').")
    help_parser = commands.add_parser(
        "help", prog=f"{PROG} help", help="this help, or a command's",
        description="Print this program's help, or COMMAND's.")
    help_parser.add_argument("topic", metavar="COMMAND", nargs="?", choices=sorted(found),
                             help="the command to describe")
    return top, found


def main(argv: Optional[list[str]] = None) -> int:
    """Run the command line on `argv` (default: sys.argv[1:]); the exit status."""
    arguments = sys.argv[1:] if argv is None else argv
    top, commands = parser()
    if not arguments:
        top.print_help(sys.stderr)  # no command is a usage error, so status 2
        return 2
    try:
        parsed = top.parse_args(arguments)
    except SystemExit as exc:  # argparse exits after --help (0) and on errors (2)
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    if parsed.command == "help":
        (commands[parsed.topic] if parsed.topic else top).print_help()
        return 0
    runs: dict[str, Callable[[], int]] = {
        "demo": demo, "version": version, "inspect": lambda: inspect(parsed.file)}
    return runs[parsed.command]()


def run() -> int:
    """main() as a process runs it: output that cannot be encoded is escaped, and an
    interrupt or a closed pipe (`| head`) end it without a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        status = main()
        if sys.stdout is not None:
            sys.stdout.flush()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Whoever read the output has gone. Point stdout at devnull, so that the flush at
        # exit does not fail again (as the signal module's documentation advises).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status


if __name__ == "__main__":
    sys.exit(run())
