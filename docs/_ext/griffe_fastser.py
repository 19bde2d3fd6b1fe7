"""A griffe extension for fastser's site: the API reference shows what `help()` shows.

griffe reads the source without importing it (the compiled build has no docstrings), so two
things fastser does at import are done here again, statically:
- the compiled classes get the docstrings that `fastser.api.attach_class_docs` attaches at
  import, read from the `CLASS_DOCS` literal of fastser/api.py;
- a module attribute without a docstring (`Frame`, `COMPILED`, ...) is described by the
  comment block right above its assignment.
Every docstring is then split into the sections fastser writes (`Parameters` / `Returns` /
`Raises` under dashed underlines, one `name: text` entry per parameter), which neither of
griffe's own parsers reads as written.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import griffe

SECTION = re.compile(r"^(Parameters|Returns|Raises)\n-{3,}\n", re.MULTILINE)
PARAMETER = re.compile(r"^(\*{0,2}\w+): ?(.*)$")
# A first paragraph that is only a call signature ("Encoder(*, a=1,\n b=2)"): the page
# renders the signature from the code already.
SIGNATURE_ONLY = re.compile(r"^\w+\(.*\)$", re.DOTALL)
# Where a Raises section names an exception: at its start or after a sentence or a clause.
CODE_SPAN = re.compile(r"(`[^`\n]+`)")
MARKDOWN_SPECIAL = re.compile(r"[\\\[\]*_<]")
EXCEPTION = re.compile(r"(?:^|(?<=\. )|(?<=; ))([A-Z]\w*(?:Error|Exception|Exit|Interrupt))\b")


class FastserDocs(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "fastser":
            return
        attach_class_docs(pkg)
        for obj in walk(pkg):
            if obj.is_attribute and obj.docstring is None:
                comment = comment_above(obj)
                if comment:
                    obj.docstring = griffe.Docstring(comment, parent=obj)
            if obj.docstring is not None:
                # Docstring.parsed is a cached property: fill it with fastser's sections.
                vars(obj.docstring)["parsed"] = sections(obj, obj.docstring.value)


def walk(obj: griffe.Object) -> list[griffe.Object]:
    found = [obj]
    for member in obj.members.values():
        if not member.is_alias:
            found += walk(member)  # type: ignore[arg-type]
    return found


def attach_class_docs(pkg: griffe.Module) -> None:
    api = pkg["api"]
    tree = ast.parse(Path(api.filepath).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id == "CLASS_DOCS" and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values):
                if isinstance(key, ast.Name) and isinstance(value, ast.Constant):
                    cls = api[key.id].final_target if api[key.id].is_alias else api[key.id]
                    text = inspect.cleandoc(str(value.value))
                    first, _, rest = text.partition("\n\n")
                    if rest and SIGNATURE_ONLY.match(first) and not takes_options(cls):
                        text = rest
                    cls.docstring = griffe.Docstring(text, parent=cls)
            return
    raise RuntimeError("fastser/api.py has no CLASS_DOCS dict literal")


def takes_options(cls: griffe.Object) -> bool:
    """Whether the class's __init__ takes its keywords as **options: Unpack[...]
    (fastser/arguments.py, "Options"), which the rendered signature shows as that alone:
    the docstring's first paragraph then stays, the keywords and defaults spelled out."""
    init = cls.members.get("__init__")
    return isinstance(init, griffe.Function) and any(
        p.kind is griffe.ParameterKind.var_keyword and "Unpack" in str(p.annotation)
        for p in init.parameters)


def comment_above(obj: griffe.Object) -> str:
    if obj.lineno is None or obj.filepath is None or isinstance(obj.filepath, list):
        return ""
    lines = Path(obj.filepath).read_text(encoding="utf-8").splitlines()
    comment: list[str] = []
    index = obj.lineno - 2
    while index >= 0 and lines[index].lstrip().startswith("#"):
        comment.insert(0, lines[index].lstrip()[1:].strip())
        index -= 1
    return " ".join(comment)


def sections(obj: griffe.Object, text: str) -> list[griffe.DocstringSection]:
    parts = SECTION.split(text)
    out: list[griffe.DocstringSection] = []
    if parts[0].strip():
        out.append(griffe.DocstringSectionText(markdown(parts[0].strip())))
    for title, body in zip(parts[1::2], parts[2::2]):
        body = body.strip()
        if title == "Parameters":
            out.append(griffe.DocstringSectionParameters(parameters(obj, body)))
        elif title == "Returns":
            returns = obj.returns if isinstance(obj, griffe.Function) else None
            out.append(griffe.DocstringSectionReturns([griffe.DocstringReturn(
                "", description=markdown(joined(body)), annotation=returns)]))
        else:
            out.append(raises(body))
    return out


def joined(body: str) -> str:
    return " ".join(line.strip() for line in body.splitlines())


def markdown(text: str) -> str:
    """Plain docstring text made safe for Markdown: `msg['tasks'][2]` is no link,
    `__cause__` no bold, `<Serialized ...>` no HTML tag; `code spans` are kept."""
    parts = CODE_SPAN.split(text)
    for index in range(0, len(parts), 2):  # the parts outside code spans
        parts[index] = MARKDOWN_SPECIAL.sub(lambda m: "&lt;" if m.group() == "<"
                                            else "\\" + m.group(), parts[index])
    return "".join(parts)


def parameters(obj: griffe.Object, body: str) -> list[griffe.DocstringParameter]:
    signature = obj.parameters if isinstance(obj, griffe.Function) else None
    entries: list[list[str]] = []
    for line in body.splitlines():
        match = PARAMETER.match(line)
        if match and not line.startswith(" "):
            entries.append([match.group(1), match.group(2)])
        elif entries:
            entries[-1][1] += " " + line.strip()
    out = []
    for name, description in entries:
        param = signature[name.lstrip("*")] if signature and name.lstrip("*") in signature \
            else None
        if signature is not None and param is None:
            raise RuntimeError(f"{obj.path}: the docstring names {name!r}, not a parameter")
        out.append(griffe.DocstringParameter(
            name, description=markdown(description.strip()),
            annotation=param.annotation if param else None,
            value=param.default if param else None))
    return out


def raises(body: str) -> griffe.DocstringSection:
    text = joined(body)
    starts = [m for m in EXCEPTION.finditer(text)]
    if not starts or starts[0].start() != 0:
        return griffe.DocstringSectionText(f"**Raises:** {markdown(text)}")
    items = []
    for match, after in zip(starts, starts[1:] + [None]):
        end = after.start() if after else len(text)
        description = text[match.end():end].strip(" ;")
        items.append(griffe.DocstringRaise(annotation=match.group(1),
                                           description=markdown(description)))
    return griffe.DocstringSectionRaises(items)
