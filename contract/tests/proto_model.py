"""A small regex/token-based reader for the contract's .proto files.

It understands exactly the proto3 subset the contract uses (messages, nested
messages and enums, `optional`/`repeated` labels, `oneof`, services with
unary rpcs, options, reserved) and refuses anything else (maps, streams,
groups, imports of other files), so a change to the .proto files that the
derived documents cannot follow is caught instead of silently skipped.

Used by check_docs.py to compare openapi.yaml and the XSD/WSDL with the
.proto files. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SCALARS = {
    "double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
    "fixed32", "fixed64", "sfixed32", "sfixed64", "bool", "string", "bytes",
}

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<line_comment>//[^\n]*)
  | (?P<block_comment>/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>-?(?:0[xX][0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?))
  | (?P<ident>\.?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<sym>[{}()\[\];=<>,:])
    """,
    re.VERBOSE | re.DOTALL,
)


class ProtoError(ValueError):
    pass


@dataclass
class Field:
    name: str
    number: int
    type: str            # a scalar name, or a resolved full name (".pkg.Msg")
    label: str | None    # None, "optional" or "repeated"
    oneof: str | None = None

    @property
    def json_name(self) -> str:
        return json_name(self.name)

    @property
    def is_scalar(self) -> bool:
        return self.type in SCALARS


@dataclass
class Message:
    full_name: str       # ".helloworld.Hello.Pet"
    fields: list[Field] = field(default_factory=list)
    oneofs: dict[str, list[str]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.full_name.rsplit(".", 1)[1]


@dataclass
class Enum:
    full_name: str
    values: list[tuple[str, int]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.full_name.rsplit(".", 1)[1]


@dataclass
class Rpc:
    service: str         # ".protobench.v1.Bench"
    name: str
    request: str         # resolved full name
    response: str


@dataclass
class Model:
    messages: dict[str, Message] = field(default_factory=dict)
    enums: dict[str, Enum] = field(default_factory=dict)
    rpcs: list[Rpc] = field(default_factory=list)

    def short(self, full_name: str) -> str:
        return full_name.rsplit(".", 1)[1]


def json_name(name: str) -> str:
    """protoc's ToJsonName: drop '_' and upper-case the letter after it."""
    out, upper = [], False
    for ch in name:
        if ch == "_":
            upper = True
        elif upper:
            out.append(ch.upper())
            upper = False
        else:
            out.append(ch)
    return "".join(out)


def _tokens(text: str) -> list[str]:
    pos, out = 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ProtoError(f"cannot tokenize at {text[pos:pos + 30]!r}")
        pos = m.end()
        if m.lastgroup in ("ws", "line_comment", "block_comment"):
            continue
        out.append(m.group())
    return out


class _Parser:
    def __init__(self, tokens: list[str], model: Model, path: str):
        self.t, self.i, self.model, self.path = tokens, 0, model, path
        self.package = ""
        self.pending: list[tuple[str, Field]] = []   # (scope, field) to resolve
        self.pending_rpcs: list[tuple[str, Rpc]] = []

    # -- token helpers
    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def next(self) -> str:
        if self.i >= len(self.t):
            raise ProtoError(f"{self.path}: unexpected end of file")
        tok = self.t[self.i]
        self.i += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise ProtoError(f"{self.path}: expected {tok!r}, got {got!r}")

    def skip_statement(self) -> None:
        depth = 0
        while True:
            tok = self.next()
            if tok in "{[(":
                depth += 1
            elif tok in "}])":
                depth -= 1
            elif tok == ";" and depth == 0:
                return

    def skip_field_options(self) -> None:
        if self.peek() == "[":
            depth = 0
            while True:
                tok = self.next()
                if tok == "[":
                    depth += 1
                elif tok == "]":
                    depth -= 1
                    if depth == 0:
                        break

    # -- grammar
    def parse_file(self) -> None:
        while self.peek() is not None:
            tok = self.next()
            if tok == "syntax":
                self.expect("=")
                if self.next().strip("'\"") != "proto3":
                    raise ProtoError(f"{self.path}: only proto3 is supported")
                self.expect(";")
            elif tok == "package":
                self.package = self.next()
                self.expect(";")
            elif tok == "option":
                self.skip_statement()
            elif tok == "import":
                raise ProtoError(f"{self.path}: imports are not supported")
            elif tok == "message":
                self.parse_message(f".{self.package}")
            elif tok == "enum":
                self.parse_enum(f".{self.package}")
            elif tok == "service":
                self.parse_service()
            elif tok == ";":
                continue
            else:
                raise ProtoError(f"{self.path}: unexpected {tok!r} at top level")
        for scope, f in self.pending:
            f.type = self.resolve(scope, f.type)
        for scope, rpc in self.pending_rpcs:
            rpc.request = self.resolve(scope, rpc.request)
            rpc.response = self.resolve(scope, rpc.response)

    def parse_message(self, scope: str) -> None:
        full = f"{scope}.{self.next()}"
        msg = Message(full)
        if full in self.model.messages:
            raise ProtoError(f"{self.path}: duplicate message {full}")
        self.model.messages[full] = msg
        self.expect("{")
        self.parse_message_body(msg, None)

    def parse_message_body(self, msg: Message, oneof: str | None) -> None:
        while True:
            tok = self.next()
            if tok == "}":
                return
            if tok == ";":
                continue
            if tok == "option" or tok == "reserved":
                self.skip_statement()
            elif tok == "message" and oneof is None:
                self.parse_message(msg.full_name)
            elif tok == "enum" and oneof is None:
                self.parse_enum(msg.full_name)
            elif tok == "oneof" and oneof is None:
                name = self.next()
                msg.oneofs[name] = []
                self.expect("{")
                self.parse_message_body(msg, name)
            elif tok in ("map", "group", "extensions", "extend", "required"):
                raise ProtoError(f"{self.path}: {tok!r} is not supported ({msg.full_name})")
            else:
                label = None
                if tok in ("optional", "repeated"):
                    if oneof is not None:
                        raise ProtoError(f"{self.path}: label inside oneof")
                    label, tok = tok, self.next()
                ftype, fname = tok, self.next()
                self.expect("=")
                number = int(self.next(), 0)
                self.skip_field_options()
                self.expect(";")
                f = Field(fname, number, ftype, label, oneof)
                if any(x.number == number or x.name == fname for x in msg.fields):
                    raise ProtoError(f"{self.path}: duplicate field {fname}/{number} in {msg.full_name}")
                msg.fields.append(f)
                if oneof is not None:
                    msg.oneofs[oneof].append(fname)
                if ftype not in SCALARS:
                    self.pending.append((msg.full_name, f))

    def parse_enum(self, scope: str) -> None:
        full = f"{scope}.{self.next()}"
        enum = Enum(full)
        self.model.enums[full] = enum
        self.expect("{")
        while True:
            tok = self.next()
            if tok == "}":
                break
            if tok == ";":
                continue
            if tok in ("option", "reserved"):
                self.skip_statement()
                continue
            self.expect("=")
            number = int(self.next(), 0)
            self.skip_field_options()
            self.expect(";")
            enum.values.append((tok, number))
        if not enum.values or enum.values[0][1] != 0:
            raise ProtoError(f"{self.path}: enum {full} must start with 0")

    def parse_service(self) -> None:
        full = f".{self.package}.{self.next()}"
        self.expect("{")
        while True:
            tok = self.next()
            if tok == "}":
                return
            if tok == ";":
                continue
            if tok == "option":
                self.skip_statement()
                continue
            if tok != "rpc":
                raise ProtoError(f"{self.path}: unexpected {tok!r} in service")
            name = self.next()
            self.expect("(")
            req = self.next()
            if req == "stream":
                raise ProtoError(f"{self.path}: streaming rpc {name} is not supported")
            self.expect(")")
            self.expect("returns")
            self.expect("(")
            resp = self.next()
            if resp == "stream":
                raise ProtoError(f"{self.path}: streaming rpc {name} is not supported")
            self.expect(")")
            if self.peek() == "{":
                depth = 0
                while True:
                    t = self.next()
                    depth += t == "{"
                    depth -= t == "}"
                    if depth == 0:
                        break
            else:
                self.expect(";")
            rpc = Rpc(full, name, req, resp)
            self.model.rpcs.append(rpc)
            self.pending_rpcs.append((f".{self.package}", rpc))

    def resolve(self, scope: str, name: str) -> str:
        if name.startswith("."):
            cands = [name]
        else:
            parts = scope.split(".")
            cands = [".".join(parts[:k] + [name]) for k in range(len(parts), 0, -1)]
        for c in cands:
            if c in self.model.messages or c in self.model.enums:
                return c
        raise ProtoError(f"{self.path}: cannot resolve type {name!r} in {scope}")


def load(paths: list[Path]) -> Model:
    model = Model()
    for p in paths:
        _Parser(_tokens(Path(p).read_text(encoding="utf-8")), model, str(p)).parse_file()
    for m in model.messages.values():
        m.fields.sort(key=lambda f: f.number)
    shorts = [model.short(n) for n in [*model.messages, *model.enums]]
    dup = {s for s in shorts if shorts.count(s) > 1}
    if dup:
        raise ProtoError(f"short type names are not unique: {sorted(dup)}")
    return model


if __name__ == "__main__":  # debugging aid: dump what was read
    import sys
    m = load([Path(a) for a in sys.argv[1:]])
    for msg in m.messages.values():
        print("message", msg.full_name)
        for f in msg.fields:
            print(f"  {f.number:>2} {f.label or '':8} {f.type:28} {f.name} ({f.json_name})"
                  + (f" oneof {f.oneof}" if f.oneof else ""))
    for e in m.enums.values():
        print("enum", e.full_name, e.values)
    for r in m.rpcs:
        print("rpc", r.service, r.name, r.request, r.response)


# --- the README's operation table ------------------------------------------

@dataclass
class Operation:
    name: str            # "GetInventoryXs"
    request: str         # short message name as the README writes it
    response: str
    method: str          # "GET" / "POST"
    path: str            # "/v1/inventory/xs"
    semantics: str       # the README's semantics column (Markdown)


_ROW = re.compile(r"^\|\s*`(?P<op>\w+)`[^|]*\|\s*`(?P<req>\w+)`\s*\|\s*`(?P<resp>\w+)`\s*\|"
                  r"\s*`(?P<method>[A-Z]+) (?P<path>/[^`]*)`\s*\|\s*(?P<sem>.*?)\s*\|\s*$")


def readme_operations(readme: Path) -> list[Operation]:
    """The rows of the README's `## Operations` table."""
    text = Path(readme).read_text(encoding="utf-8")
    m = re.search(r"^## Operations\s*$(.*?)^## ", text, re.M | re.S)
    if not m:
        raise ProtoError(f"{readme}: no '## Operations' section")
    ops = []
    for line in m.group(1).splitlines():
        r = _ROW.match(line.strip())
        if r:
            ops.append(Operation(r["op"], r["req"], r["resp"], r["method"], r["path"], r["sem"]))
    if not ops:
        raise ProtoError(f"{readme}: the operations table has no rows")
    return ops
