"""The shell lexer of ``tht-guard-hook``: POSIX/bash command text → simple commands.

Not a full bash parser, but one that errs on the side of *more* commands: quotes, backslashes,
``$'…'`` (ANSI-C), ``"…"``, ``$VAR`` / ``${VAR}`` / ``${VAR:-word}``, ``$( )``, backticks,
``<( )`` / ``>( )``, redirections (``>``, ``>>``, ``&>``, ``>|``, ``2>``, ``<>``, ``<<`` heredocs,
``<<<``), comments and the operators ``; && || | |& & ( )`` and newlines. A word keeps its parts
(literal text, variables, command substitutions, unquoted glob characters) so the caller can
expand it against the variables it tracks. Anything it cannot follow raises :class:`ParseError`;
the caller then fails closed. Standard library only (it runs before every shell command).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ParseError", "Redir", "SimpleCommand", "Word", "parse"]


class ParseError(ValueError):
    """The text cannot be followed (unbalanced quotes, substitutions, …)."""


# A part: ("lit", text) | ("glob", text) | ("var", name, default_parts | None)
#         | ("sub", source) | ("unk", text)
Part = tuple[Any, ...]


@dataclass
class Word:
    parts: list[Part] = field(default_factory=list)
    raw: str = ""


@dataclass
class Redir:
    op: str
    fd: str
    target: Word | None
    body: str | None = None  # heredoc body
    quoted_delim: bool = False


@dataclass
class SimpleCommand:
    words: list[Word] = field(default_factory=list)
    redirs: list[Redir] = field(default_factory=list)
    piped: bool = False  # stdin comes from the previous command (``|``)
    text: str = ""  # the source text of its pipeline so far (for fail-closed checks)


_OPS = (";;&", "&&", "||", ";;", ";&", "|&", "|", "&", ";", "(", ")", "\n")
_REDIRS = ("<<<", "<<-", "<<", "<>", "<&", "&>>", "&>", ">>", ">&", ">|", "<", ">")
_FD_REDIR = re.compile(r"(\d+)(?=<<<|<<-|<<|<>|<&|>>|>&|>\||<|>)")
_PLAIN = re.compile(r"[^\s'\"\\$`;&|()<>*?\[{}~,#]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACE = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")
_ANSI = re.compile(
    r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_ANSI_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def _ansi_decode(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xuU":
            return chr(int(e[1:], 16) % 0x110000)
        if e[0] in "01234567":
            return chr(int(e, 8))
        if e[0] == "c" and len(e) == 2:
            return chr(ord(e[1]) & 0x1F)
        if e in ("e", "E"):
            return "\x1b"
        return _ANSI_SIMPLE.get(e, e)

    return _ANSI.sub(one, text)


class _Lexer:
    def __init__(self, src: str) -> None:
        self.s = src
        self.i = 0
        self.n = len(src)
        self.tokens: list[object] = []
        self.pending: list[tuple[Redir, str, bool]] = []

    # -- top level -------------------------------------------------------------------------
    def run(self) -> list[object]:
        s = self.s
        while self.i < self.n:
            c = s[self.i]
            if c in " \t\r":
                self.i += 1
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":
                j = s.find("\n", self.i)
                self.i = self.n if j < 0 else j
            elif c == "\n":
                self.tokens.append("\n")
                self.i += 1
                self._heredocs()
            elif c in "<>" and s.startswith("(", self.i + 1):
                inner = self._balanced(self.i + 2)
                self.tokens.append(Word([("sub", inner)], "<(" + inner + ")"))
            else:
                m = _FD_REDIR.match(s, self.i)
                fd = ""
                if m:
                    fd = m.group(1)
                    self.i = m.end()
                op = next((r for r in _REDIRS if s.startswith(r, self.i)), None)
                if op is not None:
                    self.i += len(op)
                    self._redir(op, fd)
                    continue
                op = next((o for o in _OPS if s.startswith(o, self.i)), None)
                if op is not None:
                    self.tokens.append(op)
                    self.i += len(op)
                    continue
                self.tokens.append(self._word())
        if self.pending:  # heredoc on the last line without a newline: body is empty
            self._heredocs()
        return self.tokens

    def _redir(self, op: str, fd: str) -> None:
        while self.i < self.n and self.s[self.i] in " \t":
            self.i += 1
        if self.i >= self.n or self.s[self.i] in "\n;&|()<>":
            raise ParseError(f"redirection {op} without a target")
        target = self._word()
        redir = Redir(op, fd, target)
        if op in ("<<", "<<-"):
            quoted = any(ch in target.raw for ch in "'\"\\")
            delim = "".join(p[1] for p in target.parts if p[0] in ("lit", "glob"))
            redir.quoted_delim = quoted
            self.pending.append((redir, delim, op == "<<-"))
        self.tokens.append(redir)

    def _heredocs(self) -> None:
        for redir, delim, strip_tabs in self.pending:
            lines: list[str] = []
            while self.i < self.n:
                j = self.s.find("\n", self.i)
                line = self.s[self.i : self.n if j < 0 else j]
                self.i = self.n if j < 0 else j + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
                lines.append(line)
            redir.body = "\n".join(lines)
        self.pending = []

    # -- words -----------------------------------------------------------------------------
    def _word(self) -> Word:
        s, start = self.s, self.i
        parts: list[Part] = []
        unquoted: list[str] = []

        def lit(text: str) -> None:
            if parts and parts[-1][0] == "lit":
                parts[-1] = ("lit", parts[-1][1] + text)
            else:
                parts.append(("lit", text))

        while self.i < self.n:
            c = s[self.i]
            m = _PLAIN.match(s, self.i)
            if m:
                lit(m.group())
                unquoted.append(m.group())
                self.i = m.end()
                continue
            if c in " \t\r\n;&|<>)":
                break
            if c == "(":
                if unquoted and unquoted[-1][-1:] in ("@", "!", "+", "*", "?"):  # extglob
                    inner = self._balanced(self.i + 1)
                    parts.append(("glob", "(" + inner + ")"))
                    continue
                break
            if c == "\\":
                self._backslash(lit)
            elif c == "'":
                self._squote(lit)
            elif c == '"':
                self.i += 1
                self._dquote(parts, lit)
            elif c == "$":
                self._dollar(parts, lit, quoted=False)
            elif c == "`":
                parts.append(("sub", self._backtick()))
            elif c in "*?[":
                parts.append(("glob", c))
                unquoted.append(c)
                self.i += 1
            elif c == "~" and self.i == start:
                m = re.compile(r"~([A-Za-z0-9_.-]*)").match(s, self.i)
                assert m is not None
                parts.append(("var", "HOME", None) if not m.group(1) else ("unk", m.group()))
                self.i = m.end()
            else:  # { } , ~ # inside a word
                lit(c)
                unquoted.append(c)
                self.i += 1
        if _BRACE.search("".join(unquoted)):
            parts.append(("glob", "{}"))
        return Word(parts, s[start : self.i])

    def _backslash(self, lit: Callable[[str], None]) -> None:
        """An unquoted backslash: a line continuation, or the next character taken literally."""
        if self.s.startswith("\\\n", self.i):
            self.i += 2
            return
        if self.i + 1 < self.n:
            lit(self.s[self.i + 1])
        self.i += 2

    def _squote(self, lit: Callable[[str], None]) -> None:
        """A single-quoted string: everything up to the next ``'``, literally."""
        j = self.s.find("'", self.i + 1)
        if j < 0:
            raise ParseError("unbalanced single quote")
        lit(self.s[self.i + 1 : j])
        self.i = j + 1

    def _dquote(self, parts: list[Part], lit: object) -> None:
        s = self.s
        add = lit
        while True:
            if self.i >= self.n:
                raise ParseError("unbalanced double quote")
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 >= self.n:
                raise ParseError("unbalanced double quote (ends with a backslash)")
            if c == "\\":
                nxt = s[self.i + 1]
                if nxt != "\n":
                    add(nxt if nxt in '$`"\\' else "\\" + nxt)  # type: ignore[operator]
                self.i += 2
            elif c == "$":
                self._dollar(parts, lit, quoted=True)
            elif c == "`":
                parts.append(("sub", self._backtick()))
            else:
                j = self.i
                while j < self.n and s[j] not in '"\\$`':
                    j += 1
                add(s[self.i : j])  # type: ignore[operator]
                self.i = j

    def _dollar(self, parts: list[Part], lit: object, quoted: bool) -> None:
        s, i = self.s, self.i
        nxt = s[i + 1] if i + 1 < self.n else ""
        if nxt == "(":
            parts.append(("sub", self._balanced(i + 2)))
        elif nxt == "{":
            inner = self._braced(i + 2)
            m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])", inner)
            d = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(:?[-=])(.*)", inner, re.S)
            if m:
                parts.append(("var", m.group(1), None))
            elif d:
                parts.append(("var", d.group(1), dquote_parts(d.group(3))))
            else:
                parts.append(("unk", inner))
        elif nxt == "'" and not quoted:
            j = i + 2
            while j < self.n and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            if j >= self.n:
                raise ParseError("unbalanced $' quote")
            lit(_ansi_decode(s[i + 2 : j]))  # type: ignore[operator]
            self.i = j + 1
        elif nxt == '"' and not quoted:
            self.i = i + 2
            self._dquote(parts, lit)
        elif nxt and (nxt.isalpha() or nxt == "_"):
            m = _NAME.match(s, i + 1)
            assert m is not None
            parts.append(("var", m.group(), None))
            self.i = m.end()
        elif nxt and nxt in "0123456789@*#?$!-":
            parts.append(("var", nxt, None))
            self.i = i + 2
        else:
            lit("$")  # type: ignore[operator]
            self.i = i + 1

    def _backtick(self) -> str:
        s, j, out = self.s, self.i + 1, []
        while j < self.n and s[j] != "`":
            if s[j] == "\\" and j + 1 < self.n and s[j + 1] in "`$\\":
                out.append(s[j + 1])
                j += 2
                continue
            out.append(s[j])
            j += 1
        if j >= self.n:
            raise ParseError("unbalanced backtick")
        self.i = j + 1
        return "".join(out)

    def _skip_quoted(self, j: int) -> int:
        s = self.s
        if s[j] == "'":
            k = s.find("'", j + 1)
            if k < 0:
                raise ParseError("unbalanced single quote")
            return k + 1
        k = j + 1  # double quote or backtick
        q = s[j]
        while k < self.n and s[k] != q:
            k += 2 if s[k] == "\\" else 1
        if k >= self.n:
            raise ParseError("unbalanced quote")
        return k + 1

    def _balanced(self, start: int) -> str:
        """Text up to the ``)`` that closes an opening just before ``start``."""
        s, j, depth = self.s, start, 1
        while j < self.n:
            c = s[j]
            if c == "\\":
                j += 2
            elif c in "'\"`":
                j = self._skip_quoted(j)
            elif c == "(":
                depth += 1
                j += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    self.i = j + 1
                    return s[start:j]
                j += 1
            else:
                j += 1
        raise ParseError("unbalanced parenthesis")

    def _braced(self, start: int) -> str:
        s, j, depth = self.s, start, 1
        while j < self.n:
            c = s[j]
            if c == "\\":
                j += 2
            elif c in "'\"`":
                j = self._skip_quoted(j)
            elif c == "{":
                depth += 1
                j += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    self.i = j + 1
                    return s[start:j]
                j += 1
            else:
                j += 1
        raise ParseError("unbalanced ${")


def dquote_parts(text: str) -> list[Part]:
    """The parts of ``text`` read as the inside of a double-quoted string."""
    lx = _Lexer(text + '"')
    parts: list[Part] = []

    def lit(t: str) -> None:
        parts.append(("lit", t))

    lx._dquote(parts, lit)
    return parts


def parse(src: str) -> list[SimpleCommand]:
    """Split ``src`` into simple commands (raises :class:`ParseError`)."""
    tokens = _Lexer(src).run()
    commands: list[SimpleCommand] = []
    current = SimpleCommand()
    pipeline_raw: list[str] = []
    for token in tokens:
        if isinstance(token, Word):
            current.words.append(token)
            pipeline_raw.append(token.raw)
        elif isinstance(token, Redir):
            current.redirs.append(token)
            pipeline_raw.append(token.op + (token.target.raw if token.target else ""))
            if token.body:
                pipeline_raw.append(token.body)
        else:
            current.text = " ".join(pipeline_raw)
            if current.words or current.redirs:
                commands.append(current)
            current = SimpleCommand(piped=token in ("|", "|&"))
            if token not in ("|", "|&"):
                pipeline_raw = []
    current.text = " ".join(pipeline_raw)
    if current.words or current.redirs:
        commands.append(current)
    return commands
