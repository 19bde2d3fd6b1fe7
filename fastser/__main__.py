"""python -m fastser demo: the README's main job."""

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["demo"]:
        from ._demo import main as demo
        return demo()
    print("usage: python -m fastser demo", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
