"""Makes this folder's files from the two datasets' own (run once; its output is committed).

    python bench/data/search/make_sample.py METATOOL_CHECKOUT GORILLA_CHECKOUT

The datasets' files are 10 MB; what bench/search_quality.py needs of them is 1.4 MB, and
deterministic: MetaTool's 199 tools and 2,000 of its queries (shuffled with seed 1), and
Gorilla APIBench's 1,726 APIs (the fields a tool's document uses) with its evaluation
instructions, each with the call it expects (`call`: a number; several APIs share a call,
and any of them is a right answer).
"""

from __future__ import annotations

import csv
import json
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
METATOOL_QUERIES = 2000
METATOOL_SEED = 1
GORILLA_HUBS = (  # (APIs file, evaluation file), as in the repository's data/
    ("huggingface_api.jsonl", "huggingface_eval.json"),
    ("tensorflowhub_api.jsonl", "tensorflow_eval.json"),
    ("torchhub_api.jsonl", "torchhub_eval.json"),
)
_INSTRUCTION = re.compile(r"###Instruction:(.*?)(###Output|$)", re.S)


def metatool(checkout: Path) -> None:
    tools = json.loads((checkout / "dataset" / "plugin_des.json").read_text())
    (HERE / "metatool_tools.json").write_text(json.dumps(tools, indent=0, sort_keys=True))
    with (checkout / "dataset" / "data" / "all_clean_data.csv").open(newline="") as file:
        rows = [(row["Query"], row["Tool"]) for row in csv.DictReader(file)]
    random.Random(METATOOL_SEED).shuffle(rows)
    with (HERE / "metatool_queries.csv").open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(("query", "tool"))
        writer.writerows(rows[:METATOOL_QUERIES])


def _call(text: object) -> str:
    return re.sub(r"\s+", "", str(text)).replace('"', "'")


def _arguments(value: object) -> list[list[str]]:
    if isinstance(value, dict):
        return [[str(key), str(text)] for key, text in value.items()]
    if isinstance(value, list):
        return [[str(key), ""] for key in value]
    return []


def gorilla(checkout: Path) -> None:
    tools: list[dict[str, object]] = []
    calls: dict[str, int] = {}
    for apis, _ in GORILLA_HUBS:
        hub = apis.split("_")[0]
        for number, line in enumerate((checkout / "data" / "api" / apis).read_text().splitlines()):
            api = json.loads(line)
            key = f"{hub}:{number}"
            tools.append(
                {
                    "id": key,
                    "name": str(api["api_name"]),
                    "title": str(api.get("functionality") or ""),
                    "description": str(api.get("description") or ""),
                    "arguments": _arguments(api.get("api_arguments")),
                    "framework": str(api.get("framework") or ""),
                    "domain": str(api.get("domain") or ""),
                    "call": calls.setdefault(_call(api["api_call"]), len(calls)),
                }
            )
    queries = []
    for _, evaluation in GORILLA_HUBS:
        for line in (checkout / "data" / "apibench" / evaluation).read_text().splitlines():
            case = json.loads(line)
            found = _INSTRUCTION.search(case["code"])
            expected = calls.get(_call(case["api_call"]))
            if found and expected is not None:
                queries.append({"query": found.group(1).strip(), "call": expected})
    with (HERE / "gorilla_tools.jsonl").open("w") as file:
        file.writelines(json.dumps(tool, ensure_ascii=False) + "\n" for tool in tools)
    with (HERE / "gorilla_queries.jsonl").open("w") as file:
        file.writelines(json.dumps(query, ensure_ascii=False) + "\n" for query in queries)


if __name__ == "__main__":
    metatool(Path(sys.argv[1]))
    gorilla(Path(sys.argv[2]))
