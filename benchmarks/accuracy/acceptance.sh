#!/usr/bin/env bash
# The measured acceptance of the evidence strategy (issue 14) as one resumable command, in the order the answers
# matter most. Every method of a task runs on the same samples (same --data-seed), so the tables pair them.
#   1. RULER-HotpotQA at 400 documents (~57K tokens, past the model's 32K window): evidence, BM25-RAG, closed book;
#   2. RULER-HotpotQA at 50 documents (~7K tokens): evidence, overwrite, full context, BM25-RAG, closed book,
#      sample by sample (the default strategy is chosen from these cells, so a partial sweep pairs them all);
#   3. NIAH single-key at 32K and 128K tokens: evidence, BM25-RAG;
#   4. the slow cells: overwrite at NIAH 32K (n=16) and 400 documents (n=16);
#   then what the issue does not ask for, last:
#   5. evidence with -o link=false on the same 400-document samples (what the link rule is worth);
#   6. callback's memory as ReMemR1 kept it (the whole reply) against -o memory=update, 50 documents (n=24).
# Each part writes its own folder under OUT (default benchmarks/results/bench; the 50-document one is
# hqa50-acceptance-MODEL, as hqa50-MODEL holds the format comparison's tables; evidence's are *-ids-MODEL); stop
# it at any moment (Ctrl-C, kill) and run the same command again: finished samples are skipped. Tables and plots
# are rewritten as samples finish (summary.md, summary.json, accuracy-TASK.svg, scores.jsonl); results.jsonl holds
# third-party text and is git-ignored.
#
#   bash benchmarks/accuracy/acceptance.sh                          # llama.cpp, the default model, this machine
#   bash benchmarks/accuracy/acceptance.sh OUT --threads 2          # options after OUT go to every memread bench
#   bash benchmarks/accuracy/acceptance.sh OUT --backend openai --base-url http://gpu-box:8000/v1 --model Qwen/... --parallel 16
#
# Cost on an idle 2-core CPU with Qwen2.5-Coder-1.5B Q4_0 (rates in each summary.md header): part 1 about 1.5 hours,
# part 2 about 4 (5 minutes a sample), part 3 about 1, part 4 about 3 to 5, part 5 about 1.5, part 6 about 2.
set -euo pipefail

out=${1:-benchmarks/results/bench}
shift || true
extra=("$@")
# The default model (Q4_0). The acceptance began on Q4_K_M, the default until the Q4_0 switch; the per-sample
# results of those cells were not kept between machines, so it starts again on the default, whose cells now
# commit their scores (scores.jsonl). MEMREAD_MODEL or --model runs it on another model.
model=${MEMREAD_MODEL:-qwen2.5-coder-1.5b-q4_0}
for ((i = 0; i < ${#extra[@]}; i++)); do  # a --model among the extra options names the folders
    if [[ ${extra[i]} == --model || ${extra[i]} == -m ]]; then model=${extra[i + 1]}; fi
done
[[ " ${extra[*]} " == *" --model "* || " ${extra[*]} " == *" -m "* ]] || extra+=(--model "$model")
name=${model##*/}
name=${name%.gguf}

bench() { memread bench "$@" "${extra[@]}"; }

# evidence has its own folders (*-ids-*): its runs with ids on, its default since they were measured; the
# acceptance's first folders hold its runs from before the option existed, which they keep.
bench hqa --lengths 400 --samples 32 --methods evidence --out "$out/hqa400-ids-$name"
bench hqa --lengths 400 --samples 32 --methods bm25,closed-book --out "$out/hqa400-$name"
bench hqa --lengths 50 --samples 48 --methods evidence --out "$out/hqa50-ids-$name"
bench hqa --lengths 50 --samples 48 --methods overwrite,full,bm25,closed-book --out "$out/hqa50-acceptance-$name"
bench niah-single --lengths 32K,128K --samples 16 --methods evidence --out "$out/niah-ids-$name"
bench niah-single --lengths 32K,128K --samples 16 --methods bm25 --out "$out/niah-$name"
bench niah-single --lengths 32K --samples 16 --methods overwrite --out "$out/niah-$name"
bench hqa --lengths 400 --samples 16 --methods overwrite --out "$out/hqa400-$name"
bench hqa --lengths 400 --samples 32 --methods evidence -o link=false --out "$out/hqa400-nolink-$name"
bench hqa --lengths 50 --samples 24 --methods callback --out "$out/hqa50-callback-reply-$name"
bench hqa --lengths 50 --samples 24 --methods callback -o memory=update --out "$out/hqa50-callback-update-$name"
