"""Generated sections of the docs: a block between two HTML comments that a report writes
and a later run replaces, leaving the hand-written text around it alone.

`Section(begin, end, before)`: `begin` is the opening comment as written (a section is
found by its start before " (", so a reworded comment still matches), `end`
the closing one, `before` the heading a new section goes in front of (else the page's
end). `write_page` writes a report's data as JSON and its section into a page."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Section:
    begin: str
    end: str
    before: str | None = None

    @property
    def mark(self) -> str:
        """The opening comment before " (" (`<!-- family:begin`)."""
        return self.begin.split(" (", 1)[0]

    def wrap(self, body: str) -> str:
        return f"{self.begin}\n{body}\n{self.end}"

    def present(self, text: str) -> bool:
        return self.mark in text and self.end in text

    def splice(self, text: str, section: str) -> str:
        """`text` with its section replaced by `section` (or, without one, `section`
        before the `before` heading, else at the end)."""
        if self.present(text):
            head, rest = text.split(self.mark, 1)
            _, tail = rest.split(self.end, 1)
            return head + section + tail
        heading = f"\n{self.before}" if self.before else None
        if heading and heading in text:
            head, tail = text.split(heading, 1)
            return head.rstrip("\n") + "\n\n" + section + "\n" + heading + tail
        return (text.rstrip("\n") + "\n\n" if text.strip() else "") + section + "\n"

    def replace(self, text: str, section: str) -> str:
        """`splice`, for a page that must already hold the section (ValueError if not)."""
        if not self.present(text):
            raise ValueError(f"the page has no {self.mark} ... {self.end} markers")
        return self.splice(text, section)

    def drop(self, text: str) -> str:
        """`text` without its section (`splice`'s inverse)."""
        if not self.present(text):
            return text
        start = text.index(self.mark)
        end = text.index(self.end, start) + len(self.end)
        head, tail = text[:start].rstrip("\n"), text[end:].lstrip("\n")
        if not head:
            return tail
        return head + ("\n\n" + tail if tail else "\n")

    def keep(self, old: str, new: str) -> str:
        """`new` with the section of `old` (if it had one) carried over."""
        if not self.present(old):
            return new
        start = old.index(self.mark)
        return self.splice(new, old[start : old.index(self.end, start) + len(self.end)])


def write_page(
    section: Section, data: dict[str, Any], json_path: Path, page: Path, text: str
) -> str:
    """`data` to `json_path` (indented, keys sorted) and the section `text` into `page`
    (created if missing); returns `text`."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    page.write_text(section.splice(page.read_text() if page.exists() else "", text))
    return text


__all__ = ["Section", "write_page"]
