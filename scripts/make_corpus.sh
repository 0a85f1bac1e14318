#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# make_corpus.sh - regenerate resources/corpus/default.txt, ShardScope's
# default training corpus (mixed English and Chinese natural text, UTF-8).
#
# The program never runs this script: its output is committed, so a fresh
# machine has the corpus offline. Run it only to rebuild or audit the file.
#
# Sources (see resources/corpus/LICENSE.md for the licenses):
#   English  Debian 12 package r-cran-janeaustenr (1.0.0-1): the texts of
#            "Pride and Prejudice" (1813) and "Persuasion" (1818) by Jane
#            Austen, public domain, read straight out of the package's R
#            lazy-load database (data/Rdata.rdx + Rdata.rdb; R is not needed,
#            the small reader below decodes R's serialization format).
#   Chinese  Debian 12 package fortunes-zh (2.98), GPL-3.0-or-later: the
#            files tang300 (300 Tang poems), song100 (100 Song poems) and the
#            classical-literature entries of the file `chinese` (Shijing,
#            Analects, Daodejing, Caigentan, Zengguang Xianwen, proverbs,
#            classical prose and fables, poems by pre-1912 poets). Entries by
#            modern authors and all technical/Debian/joke entries are left out.
#
# What the script does:
#   1. `apt-get download` the two .deb files into a temporary directory
#      (nothing is installed; `apt-get update` is run once if the download
#      fails because the package lists are missing) and unpacks them with
#      `dpkg-deb -x`.
#   2. English: drops the Project Gutenberg italics markers (_word_), and
#      reflows each paragraph onto one line; paragraphs are separated by one
#      blank line.
#   3. Chinese: strips fortune's ANSI colour codes, splits at the `%`
#      separator lines, strips indentation and blank lines inside an entry, turns
#      the fortune attribution line "    --Author《Title》" into
#      "——Author《Title》", and drops entries whose text is a duplicate of,
#      or contained in, an earlier entry.
#   4. Writes both languages interleaved in 8 large blocks
#      (EN1 ZH1 EN2 ZH2 ... EN8 ZH8): English block i is the i-th eighth of
#      the two novels in reading order (cut at paragraph ends), Chinese block
#      i holds the i-th eighth of every Chinese source, so any contiguous
#      slice of the file (e.g. a held-out tail) contains both languages.
#
# The output is deterministic: running the script again on the same package
# versions rewrites the identical file (the sha256 is printed at the end).
#
# Usage:
#   scripts/make_corpus.sh            # rewrite resources/corpus/default.txt
#   scripts/make_corpus.sh --check    # regenerate to a temp file and compare
#   scripts/make_corpus.sh --out FILE # write somewhere else
#
# Needs: Debian 12 (bookworm) with apt, dpkg-deb, python3 (>= 3.9). Run as
# root, or as a user for whom `apt-get download` works (it needs no root once
# the package lists exist).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$repo_root/resources/corpus/default.txt"
check=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --check) check=1; shift ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '4,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make_corpus.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

# Package versions this corpus was made from (Debian 12). Another version
# still works but may change the output; the script says so.
declare -A want=( [r-cran-janeaustenr]=1.0.0-1 [fortunes-zh]=2.98 )

for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "make_corpus.sh: needs $tool (Debian)" >&2; exit 1; }
done
if ! command -v python3 >/dev/null; then
  echo "make_corpus.sh: installing python3" >&2
  apt-get install -y python3 >/dev/null
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/debs"
if [[ $EUID -eq 0 ]] && id _apt >/dev/null 2>&1; then
  # apt downloads as its unprivileged _apt user when run as root.
  chmod 755 "$work"
  chown _apt "$work/debs"
fi

download() {
  (cd "$work/debs" && apt-get download -q "$@")
}
if ! download "${!want[@]}" >"$work/apt.log" 2>&1; then
  echo "make_corpus.sh: apt-get download failed; running apt-get update once" >&2
  apt-get update -q >/dev/null
  download "${!want[@]}" >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; exit 1; }
fi

for pkg in "${!want[@]}"; do
  deb="$(ls "$work"/debs/"${pkg}"_*.deb)"
  ver="$(dpkg-deb -f "$deb" Version)"
  if [[ "$ver" != "${want[$pkg]}" ]]; then
    echo "make_corpus.sh: warning: $pkg is $ver, the committed corpus was made from ${want[$pkg]}" >&2
  fi
  dpkg-deb -x "$deb" "$work/root"
done

tmp_out="$work/default.txt"
python3 - "$work/root" "$tmp_out" <<'PY'
import bz2, gzip, lzma, re, struct, sys, zlib

root, out_path = sys.argv[1], sys.argv[2]
BLOCKS = 8

# ---------------------------------------------------------------- R reader --
# Minimal reader for R's XDR serialization (format versions 2 and 3), enough
# for the lazy-load database of a data-only R package: character vectors,
# numeric/integer vectors, lists, pairlists and symbols.
class RReader:
    def __init__(self, b):
        self.b, self.p, self.refs = b, 0, []

    def int(self):
        v = struct.unpack_from('>i', self.b, self.p)[0]
        self.p += 4
        return v

    def obj(self):
        flags = self.int()
        t = flags & 0xFF
        has_attr, has_tag = flags & (1 << 9), flags & (1 << 10)
        if t == 254:                       # NILVALUE_SXP
            return None
        if t == 255:                       # REFSXP
            return self.refs[(flags >> 8) - 1]
        if t == 1:                         # SYMSXP
            v = ('sym', self.obj())
            self.refs.append(v)
            return v
        if t == 9:                         # CHARSXP
            n = self.int()
            if n == -1:
                return None
            v = self.b[self.p:self.p + n].decode('utf-8')
            self.p += n
            return v
        if t == 2:                         # LISTSXP (pairlist)
            items = []
            while True:
                if has_attr:
                    self.obj()
                tag = self.obj() if has_tag else None
                items.append((tag[1] if tag else None, self.obj()))
                flags = self.int()
                if flags & 0xFF == 254:
                    return items
                if flags & 0xFF != 2:
                    raise ValueError('bad pairlist')
                has_attr, has_tag = flags & (1 << 9), flags & (1 << 10)
        if t in (16, 19, 13, 10, 14):      # STRSXP VECSXP INTSXP LGLSXP REALSXP
            n = self.int()
            if t in (16, 19):
                v = [self.obj() for _ in range(n)]
            elif t == 14:
                v = list(struct.unpack_from('>%dd' % n, self.b, self.p))
                self.p += 8 * n
            else:
                v = list(struct.unpack_from('>%di' % n, self.b, self.p))
                self.p += 4 * n
            attrs = self.obj() if has_attr else []
            return {'v': v, 'attr': dict(attrs or [])}
        raise ValueError('unsupported R type %d' % t)

def r_unserialize(b):
    if b[:2] != b'X\n':
        raise ValueError('not an XDR R serialization')
    r = RReader(b)
    r.p = 2
    version = r.int()
    r.int(); r.int()
    if version == 3:
        n = r.int()                        # native-encoding name
        r.p += n
    return r.obj()

def r_decompress(chunk):
    if chunk[:2] == b'\x1f\x8b':
        return gzip.decompress(chunk)
    body = chunk[4:]                       # 4-byte big-endian raw length
    try:
        return zlib.decompress(body)
    except zlib.error:
        kind, data = body[:1], body[1:]
        return {b'Z': lzma.decompress, b'2': bz2.decompress,
                b'0': lambda d: d}[kind](data)

def r_lazyload(base):
    index = r_unserialize(r_decompress(open(base + '.rdx', 'rb').read()))
    top = dict(zip(index['attr']['names']['v'], index['v']))
    variables = top['variables']
    db = open(base + '.rdb', 'rb').read()
    out = {}
    for name, pos in zip(variables['attr']['names']['v'], variables['v']):
        off, length = (int(x) for x in pos['v'])
        out[name] = r_unserialize(r_decompress(db[off:off + length]))['v']
    return out

# ----------------------------------------------------------------- English --
austen = r_lazyload(root + '/usr/lib/R/site-library/janeaustenr/data/Rdata')

def english_paragraphs(lines):
    text = '\n'.join(lines).replace('_', '')          # _italics_ markers
    paras = []
    for block in re.split(r'\n\s*\n', text):
        p = re.sub(r'\s+', ' ', block).strip()
        if p:
            paras.append(p)
    return paras

english = english_paragraphs(austen['prideprejudice']) + \
          english_paragraphs(austen['persuasion'])

# ----------------------------------------------------------------- Chinese --
fdir = root + '/usr/share/games/fortunes/'
ANSI = re.compile(r'\x1b\[[0-9;]*m')

def fortune_entries(name):
    text = ANSI.sub('', open(fdir + name, encoding='utf-8').read())
    # A line starting with '%' separates entries (two lines in the package
    # carry stray text after the '%': trailing blanks, a lone name).
    return [e for e in re.split(r'(?m)^%.*\n?', text) if e.strip()]

def clean_lines(entry):
    return [ln.strip() for ln in entry.split('\n') if ln.strip()]

# Classical works and pre-1912 authors kept from the mixed file `chinese`.
WORKS = re.compile(r'^(《?论语|《谚语》|《菜根谭》|《增广贤文》|《道德经》|'
                   r'《孟子梁惠王》|曹操$|(岳阳楼记|与杨京兆凭书|捕蛇者说|锦瑟|'
                   r'登乐游原|无题 \(.*\)|夜雨寄北|苏幕遮)，)')
MODERN = {'余光中', '冰心', '卫宫切嗣', '言峰绮礼', '吴军', '尤瓦尔赫拉利',
          '赫拉利', '毛泽东', '朱自清', '胡志明', '陈毅', '鲁迅', '钱钟书',
          '老舍', '巴金', '王国维'}
POET = re.compile(r'^([\u4e00-\u9fff]{1,6})\s*《')
PROSE_HEAD = re.compile(r'^\[(先秦|两汉|魏晋|唐|唐代|宋|明代|未知)\]')
PROSE_TITLES = {'大学 - 第一章', '中庸 - 第一章', '墨子 02章 修身'}

def keep_chinese_entry(entry):
    attrs = re.findall(r'^\s*--\s*(.*?)\s*$', entry, re.M)
    if attrs:
        a = attrs[-1]
        if WORKS.match(a):
            return True
        m = POET.match(a)
        return bool(m) and m.group(1) not in MODERN
    lines = clean_lines(entry)
    if not lines:
        return False
    return (lines[0].startswith('《詩經') or lines[0] in PROSE_TITLES or
            (len(lines) > 1 and PROSE_HEAD.match(lines[1]) is not None))

def format_chinese_entry(entry):
    out = []
    for ln in clean_lines(entry):
        m = re.match(r'^--\s*(.*)$', ln)
        out.append('——' + m.group(1) if m else ln)
    return '\n'.join(out)

sources = [
    [format_chinese_entry(e) for e in fortune_entries('tang300')],
    [format_chinese_entry(e) for e in fortune_entries('song100')],
    [format_chinese_entry(e) for e in fortune_entries('chinese')
     if keep_chinese_entry(e)],
]

# Drop entries whose Chinese characters repeat (or sit inside) an earlier
# entry, e.g. a famous couplet quoted again after the full poem.
def han(s):
    return ''.join(re.findall(r'[\u3400-\u9fff\uf900-\ufaff]', s))

seen = ''
deduped = []
for src in sources:
    kept = []
    for e in src:
        body = han('\n'.join(l for l in e.split('\n') if not l.startswith('——')))
        if body and body not in seen:
            seen += body + '|'
            kept.append(e)
    deduped.append(kept)

# ------------------------------------------------------------------ output --
def split_even(items, n):
    """Cut a list into n consecutive parts of about equal UTF-8 size."""
    sizes = [len(x.encode('utf-8')) + 2 for x in items]
    total = sum(sizes)
    parts, cur, acc, k = [], [], 0, 1
    for item, s in zip(items, sizes):
        cur.append(item)
        acc += s
        if k < n and acc >= total * k / n:
            parts.append(cur)
            cur, k = [], k + 1
    parts.append(cur)
    while len(parts) < n:
        parts.append([])
    return parts

en_parts = split_even(english, BLOCKS)
zh_parts = [split_even(src, BLOCKS) for src in deduped]

blocks = []
for i in range(BLOCKS):
    blocks.append('\n\n'.join(en_parts[i]))
    zh = [e for parts in zh_parts for e in parts[i]]
    blocks.append('\n\n'.join(zh))
text = '\n\n'.join(b for b in blocks if b) + '\n'
with open(out_path, 'w', encoding='utf-8', newline='\n') as f:
    f.write(text)

en_chars = sum(len(p) for p in english)
zh_text = '\n\n'.join(e for src in deduped for e in src)
print('english: %d paragraphs, %d chars, %d bytes' %
      (len(english), en_chars, len('\n\n'.join(english).encode())))
print('chinese: %d entries (tang300 %d, song100 %d, chinese %d), %d chars '
      '(%d Han), %d bytes' %
      (sum(map(len, deduped)), *map(len, deduped), len(zh_text),
       len(han(zh_text)), len(zh_text.encode())))
PY

mkdir -p "$(dirname "$out")"
if [[ $check -eq 1 ]]; then
  if cmp -s "$tmp_out" "$out"; then
    echo "make_corpus.sh: $out is up to date"
  else
    echo "make_corpus.sh: $out differs from a fresh build" >&2
    exit 1
  fi
else
  cp "$tmp_out" "$out.tmp" && mv "$out.tmp" "$out"
  echo "make_corpus.sh: wrote $out"
fi
echo "size: $(stat -c %s "$out") bytes  sha256: $(sha256sum "$tmp_out" | cut -d' ' -f1)"
