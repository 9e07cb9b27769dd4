#!/usr/bin/env python3
"""Hugging Face tokenizers as the oracle of perpcomp's tokenizers. Runs in the reference
environment (tools/setup-reference.sh).

  hf_tokenize.py KIND PATH SHARED_DATA OUT
      KIND json:       PATH is a tokenizer.json, loaded by tokenizers.Tokenizer.from_file
      KIND sentencepiece: PATH is a sentencepiece tokenizer.model, run by the sentencepiece
                       library itself (see load() for why not transformers' conversion)
      KIND folder:     PATH is a model folder, loaded by AutoTokenizer.from_pretrained (fast)
      Tokenizes every text of the corpus below without special tokens and writes OUT, JSON lines
      {"set", "text", "ids", "decoded", "roundtrip"}: decoded is the backend's decode of ids
      (special tokens skipped, no clean-up), roundtrip whether decoded == text.

The corpus (SHARED_DATA is ../shared/data): WikiText-2 test whole (one text, as evaluation reads
it) and line by line; every C4-sample document; every distinct BLiMP sentence (67 files, good and
bad); and a generated adversarial set (seeded): characters of every Unicode general category,
combining marks, emoji (ZWJ sequences, flags, skin tones), whitespace runs, control characters,
invalid byte sequences decoded as UTF-8 (U+FFFD), numbers, code.
"""
import glob
import json
import os
import random
import sys
import unicodedata


def adversarial(seed=20261201):
    rng = random.Random(seed)
    by_cat = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        by_cat.setdefault(unicodedata.category(chr(cp)), []).append(cp)
    out = []
    # Every general category (Cn unassigned and Co private use too): runs and mixes with words.
    for cat in sorted(by_cat):
        cps = by_cat[cat]
        for _ in range(12):
            run = "".join(chr(rng.choice(cps)) for _ in range(rng.randint(1, 8)))
            out.append(run)
            out.append(f"word{run} and {run}word {run}")
    combining = [cp for cp in by_cat["Mn"] if cp < 0x3000]
    for base in ["e", "a", "ñ", "ก", "क", "ㄱ", " ", "1", "Z"]:
        for _ in range(6):
            out.append(base + "".join(chr(rng.choice(combining)) for _ in range(rng.randint(1, 6))) + " next")
    out += [
        "👩‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "🇩🇪🇫🇷🇯🇵", "👍🏽👍🏿", "🧑‍💻 coding", "❤️‍🔥", "a😀b😀😀c",
        "ZWJ\u200dalone", "ZWNJ\u200cword", "BOM\ufeffinside", "\ufeffleading BOM", "variation\ufe0fselector",
    ]
    spaces = [" ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2009", "\u200b", "\u2028", "\u000b", "\u000c"]
    for n in (1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 64, 100, 257):
        for s in spaces:
            out.append("a" + s * n + "b")
            out.append(s * n)
            out.append("x" + s * n)
    out += ["  leading", "trailing  ", " \n \n ", "\n\n\n", "\t\tindented\n\t\t\tmore", "mixed \t\n \r\n end"]
    for c in list(range(0x00, 0x20)) + [0x7F] + list(range(0x80, 0xA0)):
        out.append(f"ctl{chr(c)}here {chr(c)}{chr(c)}")
    for _ in range(60):
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(1, 24)))
        out.append(raw.decode("utf-8", errors="replace"))
        out.append("ok " + (b"\xc3\x28 \xe2\x82 \xf0\x9f\x98" + raw).decode("utf-8", errors="replace") + " ok")
    out += ["0", "00", "123", "1234", "12345", "123456789012345678901234567890", "3.14159", "-42", "1,000,000",
            "1e-5", "0x1F", "٣٤٥", "१२३", "１２３", "½ ⅔ ¾", "2026-12-01T21:55:00Z", "$1.99", "10%", "v1.2.3-rc4"]
    for _ in range(30):
        out.append(" ".join(str(rng.randrange(10 ** rng.randint(1, 12))) for _ in range(rng.randint(1, 6))))
    out += [
        "def f(x):\n    return x ** 2  # square\n",
        "int main() { printf(\"%d\\n\", a[i] >> 2); return 0; }",
        "for (auto& [k, v] : m) { std::cout << k << '=' << v << \"\\n\"; }",
        "if x != y && z <= 3 || !w { ... }",
        "<div class=\"a\">&amp; &lt;tag&gt;</div>",
        "SELECT * FROM t WHERE id = 'x'; -- comment",
        "λx. x → ∀y ∈ ℝ: y² ≥ 0",
        "path/to/file.txt C:\\Windows\\System32 https://example.com/a?b=c&d=e#f",
        "camelCaseWord snake_case_word kebab-case-word SCREAMING_CASE",
        "'s 't 're 've 'm 'll 'd 'S 'T 'RE \"quoted\" ‘curly’ “double”",
        "<|endoftext|> <s> </s> <unk> <pad> [CLS] [SEP]",
        "日本語のテキスト、中文文本，한국어 텍스트. Ελληνικά Русский текст עברית العربية",
    ]
    return [t for t in out if t]


def corpus(shared):
    sets = []
    wiki = open(os.path.join(shared, "text/wikitext-2/wiki.test.raw.txt"), encoding="utf-8").read()
    sets.append(("wikitext-whole", [wiki]))
    sets.append(("wikitext-lines", [line for line in wiki.split("\n") if line]))
    c4 = [json.loads(line)["text"] for line in open(os.path.join(shared, "text/c4-sample/c4_sample.jsonl"),
                                                     encoding="utf-8") if line.strip()]
    sets.append(("c4", c4))
    blimp = set()
    for f in sorted(glob.glob(os.path.join(shared, "tasks/blimp/data/*.jsonl"))):
        for line in open(f, encoding="utf-8"):
            if line.strip():
                r = json.loads(line)
                blimp.add(r["sentence_good"])
                blimp.add(r["sentence_bad"])
    sets.append(("blimp", sorted(blimp)))
    sets.append(("adversarial", adversarial()))
    return sets


def load(kind, path):
    """(encode(texts) -> list of id lists, decode(ids) -> str)."""
    if kind == "json":
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(path)
    elif kind == "sentencepiece":
        # The tokenizer.model's own library. transformers 5's conversion of a folder holding only
        # tokenizer.model (LlamaTokenizer.from_pretrained, legacy or not) uses a Metaspace
        # pre-tokenizer that does not add the dummy-prefix "▁" before text that starts with a
        # space, so it differs from sentencepiece and from the tokenizer.json Llama repositories
        # publish (transformers 4's LlamaConverter); perpcomp follows sentencepiece.
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_file=path)

        def encode(texts):
            return sp.encode(texts, out_type=int)

        def decode(ids):
            return sp.decode(ids)
        return encode, decode
    elif kind == "folder":
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(path, use_fast=True).backend_tokenizer
    else:
        sys.exit(f"hf_tokenize.py: unknown KIND {kind}")

    def encode(texts):
        return [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]

    def decode(ids):
        return tok.decode(ids, skip_special_tokens=True)
    return encode, decode


def main():
    kind, path, shared, out = sys.argv[1:5]
    encode, decode = load(kind, path)
    with open(out, "w", encoding="utf-8") as f:
        for name, texts in corpus(shared):
            if kind == "sentencepiece":
                # sentencepiece never matches control pieces typed in the text; Hugging Face
                # tokenizers and perpcomp do (tests/tokenizer/vectors_test.cc checks that).
                texts = [t for t in texts if not any(p in t for p in ("<s>", "</s>", "<unk>"))]
            for text, ids in zip(texts, encode(texts)):
                decoded = decode(ids)
                f.write(json.dumps({"set": name, "text": text, "ids": ids, "decoded": decoded,
                                    "roundtrip": decoded == text}) + "\n")


if __name__ == "__main__":
    main()
