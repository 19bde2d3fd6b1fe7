"""Where in a message an object sits, as Python subscripts (`msg['tasks']['x'][2]`).

Only called after a failure, so the hot walk never carries a path.
"""

from typing import Optional


def find_path(msg: object, target: object) -> str:
    found = search(msg, target, "msg", 0)
    return found if found is not None else "an unknown place in msg"


def search(node: object, target: object, path: str, depth: int) -> Optional[str]:
    if node is target:
        return path
    if depth > 512:  # deeper than any message dumps accepts
        return None
    if type(node) is dict:
        for key, value in node.items():
            if key is target:
                return f"{path} (the key {key!r})"
            found = search(value, target, f"{path}[{key!r}]", depth + 1)
            if found is not None:
                return found
    elif type(node) is list or type(node) is tuple:
        for index, item in enumerate(node):
            found = search(item, target, f"{path}[{index}]", depth + 1)
            if found is not None:
                return found
    elif type(node) is set or type(node) is frozenset:
        for item in node:
            found = search(item, target, f"{path} (a member {item!r})", depth + 1)
            if found is not None:
                return found
    return None
