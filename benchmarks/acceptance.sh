#!/usr/bin/env bash
# The whole measured baseline of `memread bench`, in the order we want the answers, as one resumable command:
#   1. the evidence-early speed comparison (gated with its exit gate vs overwrite, RULER-HotpotQA, 100 documents);
#   2. RULER-HotpotQA at 50 and 200 documents, every method, 24 samples each;
#   3. NIAH single-key at 8K, 32K and 64K tokens, every method (full context is N/A past the window).
# Methods: the three strategies, full context, BM25-RAG and closed book (the question alone, seconds per sample).
# Each part writes its own folder under OUT (default benchmarks/results/bench); stop it at any moment (Ctrl-C,
# kill) and run the same command again: finished samples are skipped. The tables and plots are rewritten as
# samples finish (summary.md, summary.json, accuracy-TASK.svg); results.jsonl holds third-party text and is
# git-ignored.
#
#   bash benchmarks/acceptance.sh                          # llama.cpp, the default model, this machine
#   bash benchmarks/acceptance.sh OUT --backend openai --base-url http://gpu-box:8000/v1 --model Qwen/... --parallel 16
#
# Cost on a 2-core CPU with Qwen2.5-Coder-1.5B (measured rates, benchmarks/results/bench/README.md): about
# 40 hours, most of it in part 2 at 200 documents and part 3 at 64K. On a GPU through vLLM, about an hour.
set -euo pipefail

out=${1:-benchmarks/results/bench}
shift || true
extra=("$@")
model=${MEMREAD_MODEL:-qwen2.5-coder-1.5b}
for ((i = 0; i < ${#extra[@]}; i++)); do  # a --model among the extra options names the folders
    if [[ ${extra[i]} == --model || ${extra[i]} == -m ]]; then model=${extra[i + 1]}; fi
done
[[ " ${extra[*]} " == *" --model "* || " ${extra[*]} " == *" -m "* ]] || extra+=(--model "$model")
name=${model##*/}
all=overwrite,gated,callback,full,bm25,closed-book

bench() { memread bench "$@" "${extra[@]}"; }

bench hqa-early --lengths 100 --samples 24 --methods overwrite,gated,closed-book --out "$out/hqa-early-$name"
bench hqa --lengths 50,200 --samples 24 --methods "$all" --out "$out/hqa-$name"
bench niah-single --lengths 8K,32K,64K --samples 24 --methods "$all" --out "$out/niah-single-$name"
