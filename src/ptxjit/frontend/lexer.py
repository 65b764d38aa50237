"""PTX tokenizer: one compiled regular expression scans the whole text.

Tokens are (kind, text, offset).  Line/column are computed on demand from the offset, which
keeps tokenizing a 100k-line file cheap.
"""

from __future__ import annotations

import bisect
import re

from ptxjit.errors import PTXSyntaxError, SourcePos

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<hexfloat>0[fF][0-9a-fA-F]{8}(?![\w$])|0[dD][0-9a-fA-F]{16}(?![\w$]))
  | (?P<float>(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?![\w$]))
  | (?P<int>(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)[uU]?(?![\w$]))
  | (?P<badnum>\d[\w$]*)
  | (?P<directive>\.[A-Za-z_][\w$]*(?:::[\w$]+)*)
  | (?P<ident>(?:%[\w$]|[$A-Za-z_])[\w$]*(?:(?:\.|::)[\w$]+)*)
  | (?P<punct><<|>>|<=|>=|==|!=|&&|\|\||[{}()\[\];,:<>+\-|!@=*/_~%&^?])
    """,
    re.VERBOSE | re.DOTALL,
)

Token = tuple[str, str, int]


class SourceText:
    """The text of one PTX file with offset -> (line, col) mapping."""

    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self._line_starts = [0]
        self._line_starts.extend(m.end() for m in re.finditer("\n", text))

    def pos(self, offset: int) -> SourcePos:
        line = bisect.bisect_right(self._line_starts, offset)
        return SourcePos(self.name, line, offset - self._line_starts[line - 1] + 1)

    def line_text(self, line: int) -> str:
        start = self._line_starts[line - 1]
        end = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.text)
        return self.text[start:end]


def tokenize(src: SourceText) -> list[Token]:
    text = src.text
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    n = len(text)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            bad = text[pos:pos + 20].split("\n")[0]
            raise PTXSyntaxError(src.pos(pos), "unexpected character", bad)
        kind = m.lastgroup
        if kind == "badnum":  # `09`, `0x`, `12ab`: ptxas refuses these as syntax errors too
            raise PTXSyntaxError(src.pos(pos), "malformed number (decimal, 0x hex, 0b binary or 0 octal "
                                 "integer, or a 0f/0d float)", m.group())
        if kind != "ws":
            append((kind, m.group(), pos))
        pos = m.end()
    append(("eof", "", n))
    return tokens
