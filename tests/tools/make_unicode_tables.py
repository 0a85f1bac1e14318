#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write engine/data/unicode_class_table.cpp and unicode_mapping_tables.cpp: the character classes and mappings the
GPT-2 and BERT tokenizers need (engine/data/unicode_text.h).

The tables are measured from the Hugging Face `tokenizers` library itself, one
code point at a time, not taken from Python's `unicodedata`: the library's
regex engine (Oniguruma) and its Rust crates carry their own Unicode versions
(Python 3.11 has Unicode 14; the regex in tokenizers 0.23 already knows
letters added in Unicode 16), and ShardScope must give the library's ids.

    python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install tokenizers==0.23.3
    /tmp/tokvenv/bin/python tests/tools/make_unicode_tables.py     # ~1 min

What each bit means, and how it is measured:
  LETTER, NUMBER, REGEX_SPACE   \\p{L}, \\p{N} and \\s of the GPT-2 pre-tokenizer regex
                                (ByteLevel): "a"+c is one piece, "1"+c is one piece,
                                "!"+c+"!" is not one piece (and c is neither)
  BERT_WHITESPACE, BERT_PUNCTUATION
                                BertPreTokenizer drops c from "a"+c+"a" (2 pieces) or
                                isolates it (3 pieces)
  BERT_CONTROL, CLEAN_TO_SPACE  BertNormalizer(clean_text) removes c, or makes it ' '
  ACCENT_MARK                   BertNormalizer(strip_accents) removes c (NFD, then no Mn)
Mappings: lowercase (BertNormalizer(lowercase)) and strip_accents of the code
points it changes, as runs; Hangul syllables decompose by the Unicode formula
(checked here) and are left out of the table.
"""
from __future__ import annotations

import pathlib
import sys

import tokenizers
from tokenizers import normalizers, pre_tokenizers

OUT_DIR = pathlib.Path(__file__).resolve().parents[2] / "engine" / "data"
LETTER, NUMBER, REGEX_SPACE = 1, 2, 4
BERT_WHITESPACE, BERT_PUNCTUATION, BERT_CONTROL, CLEAN_TO_SPACE, ACCENT_MARK = 8, 16, 32, 64, 128
# BertNormalizer's handle_chinese_chars ranges (tokenizers/src/normalizers/bert.rs), checked below.
CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
       (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]


def code_points():
    for cp in range(0x110000):
        if not 0xD800 <= cp <= 0xDFFF:
            yield cp


def hangul(cp):
    s = cp - 0xAC00
    out = [0x1100 + s // 588, 0x1161 + (s % 588) // 28]
    if s % 28:
        out.append(0x11A7 + s % 28)
    return "".join(map(chr, out))


def measure():
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    bert_pre = pre_tokenizers.BertPreTokenizer()
    bert = normalizers.BertNormalizer
    clean = bert(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    chinese = bert(clean_text=False, handle_chinese_chars=True, strip_accents=False, lowercase=False)
    strip = bert(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
    lower = bert(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True)
    flags, lowercase, accents = {}, {}, {}
    for cp in code_points():
        c = chr(cp)
        f = 0
        if len(byte_level.pre_tokenize_str("a" + c)) == 1:
            f |= LETTER
        elif len(byte_level.pre_tokenize_str("1" + c)) == 1:
            f |= NUMBER
        elif c == " " or len(byte_level.pre_tokenize_str("!" + c + "!")) != 1:
            f |= REGEX_SPACE
        pieces = len(bert_pre.pre_tokenize_str("a" + c + "a"))
        f |= {1: 0, 2: BERT_WHITESPACE, 3: BERT_PUNCTUATION}[pieces]
        cleaned = clean.normalize_str(c)
        if cleaned == "":
            f |= BERT_CONTROL
        elif cleaned == " " and c != " ":
            f |= CLEAN_TO_SPACE
        stripped = strip.normalize_str(c)
        if stripped == "":
            f |= ACCENT_MARK
        elif stripped != c:
            if 0xAC00 <= cp <= 0xD7A3:
                assert stripped == hangul(cp), hex(cp)
            else:
                accents[cp] = stripped
        if (lowered := lower.normalize_str(c)) != c:
            lowercase[cp] = lowered
        in_cjk = any(a <= cp <= b for a, b in CJK)
        assert (chinese.normalize_str(c) == " " + c + " ") == in_cjk, hex(cp)
        if f:
            flags[cp] = f
    return flags, lowercase, accents


def class_ranges(flags):
    ranges, previous = [], None
    for cp in code_points():
        f = flags.get(cp, 0)
        if f != previous:
            ranges.append((cp, f))
            previous = f
    return ranges


def runs(mapping):
    """Single-character mappings as runs (first, count, stride, delta): every
    stride-th code point from first maps to itself + delta."""
    single = sorted((cp, ord(v[0])) for cp, v in mapping.items() if len(v) == 1)
    out = []
    for cp, target in single:
        if out:
            first, count, stride, delta = out[-1]
            last = first + (count - 1) * stride
            if target - cp == delta and (count == 1 and cp - last <= 2 or cp - last == stride):
                out[-1] = (first, count + 1, cp - last if count == 1 else stride, delta)
                continue
        out.append((cp, 1, 1, target - cp))
    return out


def pairs(mapping):
    return sorted((cp, ord(v[0])) for cp, v in mapping.items() if len(v) == 1)


def multi(mapping):
    rows = sorted((cp, [ord(x) for x in v]) for cp, v in mapping.items() if len(v) != 1)
    assert all(len(v) <= 3 for _, v in rows)
    return rows


def table(items, width=116):
    """C++ initializer rows, as many items a line as fit in `width` columns."""
    lines, line = [], "   "
    for item in items:
        if len(line) + 1 + len(item) > width:
            lines.append(line)
            line = "   "
        line += " " + item
    return "\n".join(lines + [line])


HEADER = """// SPDX-License-Identifier: GPL-3.0-or-later
// Generated by tests/tools/make_unicode_tables.py from tokenizers {version}: do not edit.
// {what} (engine/data/unicode_text.h), measured from the Hugging
// Face tokenizers library one code point at a time (see the script).
#include "data/unicode_tables.h"

namespace shardscope::unicode_tables {{

// clang-format off
"""
FOOTER = """// clang-format on

}  // namespace shardscope::unicode_tables
"""


def write_classes(flags):
    ranges = class_ranges(flags)
    text = HEADER.format(version=tokenizers.__version__, what="The class bits of every code point")
    text += f"""// {len(ranges)} ranges: (first code point, class bits), each up to the next one's start.
const ClassRange kClassRanges[] = {{
{table([f"{{0x{a:X}, {f}}}," for a, f in ranges])}
}};
const std::size_t kClassRangeCount = sizeof(kClassRanges) / sizeof(kClassRanges[0]);
""" + FOOTER
    (OUT_DIR / "unicode_class_table.cpp").write_text(text)
    return len(ranges)


def write_mappings(lowercase, accents):
    def multi_items(rows):
        return ["{0x%X, {%s}}," % (cp, ", ".join(f"0x{x:X}" for x in v) or "0") for cp, v in rows]
    low_runs, accent_pairs = runs(lowercase), pairs(accents)
    text = HEADER.format(version=tokenizers.__version__, what="BertNormalizer's lowercase and strip_accents")
    text += f"""// Lowercase (Rust char::to_lowercase, per code point) of {len(lowercase)} code points: runs
// (first, count, stride, delta), every stride-th code point from first maps to itself + delta.
const MappingRun kLowercaseRuns[] = {{
{table([f"{{0x{a:X}, {n}, {s}, {d}}}," for a, n, s, d in low_runs])}
}};
const std::size_t kLowercaseRunCount = sizeof(kLowercaseRuns) / sizeof(kLowercaseRuns[0]);
const MultiMapping kLowercaseMulti[] = {{
{table(multi_items(multi(lowercase)))}
}};
const std::size_t kLowercaseMultiCount = sizeof(kLowercaseMulti) / sizeof(kLowercaseMulti[0]);

// Strip accents (NFD, then without Mn marks) of {len(accents)} code points; Hangul syllables
// (by formula) and the removed marks (ACCENT_MARK) aside. (code point, its one replacement):
const CodePointPair kStripAccentPairs[] = {{
{table([f"{{0x{a:X}, 0x{b:X}}}," for a, b in accent_pairs])}
}};
const std::size_t kStripAccentPairCount = sizeof(kStripAccentPairs) / sizeof(kStripAccentPairs[0]);
// ... and those replaced by two or three code points:
const MultiMapping kStripAccentMulti[] = {{
{table(multi_items(multi(accents)))}
}};
const std::size_t kStripAccentMultiCount = sizeof(kStripAccentMulti) / sizeof(kStripAccentMulti[0]);
""" + FOOTER
    (OUT_DIR / "unicode_mapping_tables.cpp").write_text(text)
    return len(low_runs), len(accent_pairs)


if __name__ == "__main__":
    flags, lowercase, accents = measure()
    n_ranges = write_classes(flags)
    n_runs, n_pairs = write_mappings(lowercase, accents)
    print(f"wrote {OUT_DIR}/unicode_class_table.cpp ({n_ranges} ranges) and unicode_mapping_tables.cpp "
          f"({n_runs} lowercase runs, {n_pairs} strip-accent pairs)", file=sys.stderr)
