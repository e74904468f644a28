"""Each benchmark owns one delimited section of docs/benchmarks.md (`<!-- name:start -->` ..
`<!-- name:end -->`, the markers inside the section's text): `replace_section` swaps it in place, or
appends it (under `heading` when given) when the document does not have it yet, and leaves every
other line of the document as it was."""

from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, start: str, end: str, section: str, *, heading: str | None = None) -> None:
    doc = path.read_text() if path.exists() else ""
    if start in doc and end in doc:
        head, rest = doc.split(start, 1)
        tail = rest.split(end, 1)[1].lstrip("\n")
        doc = head + section.rstrip("\n") + "\n" + ("\n" + tail if tail else "")
    else:
        title = f"{heading}\n\n" if heading else ""
        doc = (doc.rstrip("\n") + "\n\n" if doc.strip() else "") + title + section.rstrip("\n") + "\n"
    path.write_text(doc)
