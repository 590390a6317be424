"""Real English -> French parallel text available offline: the message catalogs of the
installed Debian/Ubuntu packages (/usr/share/locale/fr/LC_MESSAGES/*.mo, written by the
packages' translation teams; each catalog carries its package's licence, mostly GPL-2+
or LGPL, see /usr/share/doc/<package>/copyright).

    pairs = catalog_pairs()            # {catalog name: [(english, french), ...]}, sorted, cleaned

A pair is a singular msgid with a non-empty msgstr, whitespace collapsed, GTK/Qt
accelerator marks left as they are (they are part of the text the model must carry
over), 2..MAX_CHARS characters on both sides. The pairs depend on what is installed,
so the trained models are committed (tests never train) with the held-out pairs they
were measured on.
"""
from __future__ import annotations

import gettext
import re
from pathlib import Path

LOCALE = Path("/usr/share/locale")
MAX_CHARS = 120


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def read_catalog(path: Path) -> list[tuple[str, str]]:
    """The (msgid, msgstr) pairs of one .mo file; [] for one Python cannot read."""
    try:
        with open(path, "rb") as fh:
            catalog = gettext.GNUTranslations(fh)._catalog
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    out = []
    for key, value in catalog.items():
        if isinstance(key, tuple) or not key or not value:
            continue  # plural forms and the header
        en, fr = _clean(key), _clean(value)
        if 2 <= len(en) <= MAX_CHARS and 2 <= len(fr) <= MAX_CHARS and en != fr:
            out.append((en, fr))
    return sorted(out)


def catalog_pairs(lang: str = "fr") -> dict[str, list[tuple[str, str]]]:
    """Every readable catalog of `lang`, by its file name without .mo."""
    out = {}
    for path in sorted((LOCALE / lang / "LC_MESSAGES").glob("*.mo")):
        pairs = read_catalog(path)
        if pairs:
            out[path.stem] = pairs
    return out
