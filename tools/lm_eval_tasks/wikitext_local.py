"""The local WikiText task's documents: wiki.test.raw.txt (read by datasets' "text" builder, one
row per line) cut into pages, one per top-level heading line " = Title = ", as the hub's
wikitext_document_level builds them. Detokenizer and scoring are lm-eval's own."""
import re

import datasets
from lm_eval.tasks.wikitext.preprocess_wikitext import process_results, wikitext_detokenizer  # noqa: F401

_HEADING = re.compile(r"^ = [^=].* = $")


def pages(dataset: datasets.Dataset) -> datasets.Dataset:
    out, cur = [], []
    for line in dataset["text"]:
        if _HEADING.match(line) and any(x.strip() for x in cur):
            out.append("\n".join(cur))
            cur = []
        cur.append(line)
    if any(x.strip() for x in cur):
        out.append("\n".join(cur))
    return datasets.Dataset.from_dict({"page": out})
