#!/usr/bin/env bash
# Issue 35's remaining acceptance cells (results/goal-35.md), shared by workers so that neither core idles: each
# worker takes the next job nobody has taken (a claim is a directory, made atomically) and runs it at one thread.
# The docqa `overwrite` cell runs as one job a question, each into its own folder. A job that stops (Ctrl-C, a
# reset machine) is taken again by the next worker started; `memread bench` skips the samples already finished.
#
#   bash benchmarks/accuracy/goal35_pool.sh setup        # the frozen worktrees and their `memread` wrappers,
#                                                        # for the python of the activated environment
#   nohup setsid nice -n 10 bash benchmarks/accuracy/goal35_pool.sh work a >> $SWEEPS/pool-a.log 2>&1 &
#   nohup setsid nice -n 10 bash benchmarks/accuracy/goal35_pool.sh work b >> $SWEEPS/pool-b.log 2>&1 &
#   bash benchmarks/accuracy/goal35_pool.sh sync         # finished scores into results/bench, the goal check again
#
# SWEEPS (default /work/sweeps) holds the folders (acc/), the document cache and the claims; it is never committed
# (results.jsonl holds third-party text). The frozen code: `overwrite` runs v7 (24fb49c with the resume fix
# 60dc942, as its first three docqa questions did), `evidence` at 400 documents runs v11 (95a4fa1), whose reads
# stand for v12 (669972e) and v13 (4c6a041, the candidate), which change none of them.
set -uo pipefail
main=$(cd "$(dirname "$0")/../.." && pwd)
sweeps=${SWEEPS:-/work/sweeps}
Q=qwen2.5-coder-1.5b-q4_0
export MEMREAD_DOCQA_DIR=${MEMREAD_DOCQA_DIR:-$sweeps/docqa-cache}
# The HotpotQA acceptance samples (seed 1127) v36's rule can reach (benchmarks/studies/round_reach.py), read again
# by v36: the jobs read them, sync makes v36's folders once they all are
V36_HQA=(hqa50-seed1127:50:48:5,8,29,30,31,33,40,47 hqa400-seed1127:400:32:5,8,29,30,31)
# v37 (2d022d3) reaches every read (a sentence opening with a connective can be kept anywhere, a step's answer can
# be a list): it reads all the acceptance samples again, each cell in two halves, one a worker ("Toward v37")
V37_DOCQA_A=octave-pdf-01,octave-pdf-03,octave-pdf-05,octave-pdf-07,octave-pdf-09,devref-epub-01,devref-epub-03,devref-epub-05,devref-epub-07,devref-epub-09
V37_DOCQA_B=gcc-testlog-01,gcc-testlog-03,gcc-testlog-05,gcc-testlog-07,gcc-testlog-09,handbook-html-01,handbook-html-03,handbook-html-05,handbook-html-07,handbook-html-09,binutils-changelog-01,binutils-changelog-03,binutils-changelog-05,binutils-changelog-07,binutils-changelog-09
V37_HQA=(hqa50-seed1127:50:48:a:0-23 hqa50-seed1127:50:48:b:24-47 hqa400-seed1127:400:32:a:0-15 hqa400-seed1127:400:32:b:16-31)
# v38 (38f013d: a select answer copied with a slip, cut off, or made of the question's words) reads the
# acceptance again the same way ("Toward v38"); its design reads are made by hand, before these
V38_DOCQA_A=$V37_DOCQA_A
V38_DOCQA_B=$V37_DOCQA_B
# v40 (8ed7530; its memread is 0b43953's: a round reads at most a quarter of a short document) reaches every
# HotpotQA sample at 50 documents and nothing else (by code, "Toward v40"): it reads seed 1127's 48 in the same
# halves, with nothing else running (the default-strategy rule's time condition compares their seconds)
V40_HQA=(a:0-23 b:24-47)
# jobs whose folders results/bench holds whole: a new machine marks them done at setup, and never reads them again
FINISHED=(hqa50-v36 hqa400-v36 docqa-v37-a docqa-v37-b hqa50-v37-a hqa50-v37-b hqa400-v37-a hqa400-v37-b
          docqa-v38-a docqa-v38-b hqa50-v38-a hqa50-v38-b hqa400-v38-a hqa400-v38-b hqa50-v40-a hqa50-v40-b
          hqa50-ow-a hqa50-ow-b hqa50-cf-a hqa50-cf-b hqa400-v11 hqa400-base)
# overwrite's 48 at 50 documents read again by v7 on the machine that read v37's, in halves (goal-35.md, "Overwrite's
# 48 at 50 documents, read again on one CPU"): the rule's time condition then compares seconds of one CPU
OW_HQA50=(a:0-23 b:24-47)

jobs() {  # name|version|memread bench arguments, in the order they are taken
    # v36's reads of the HotpotQA acceptance samples its rule can reach ("Toward v36"), chosen samples through
    # bench_samples.py (the memread-v36-samples wrapper, which setup makes)
    local cell folder length samples indices
    for cell in "${V36_HQA[@]}"; do
        IFS=: read -r folder length samples indices <<< "$cell"
        echo "hqa$length-v36|v36-samples|--indices $indices -- bench hqa --lengths $length --samples $samples --methods evidence --threads 1 --data-seed 1127 --model $Q --out acc/$folder-v36-own-$Q"
    done
    echo "docqa-v37-a|v37|docqa --questions $V37_DOCQA_A --methods evidence --threads 1 --model $Q --out acc/docqa-v37-own-a-$Q"
    echo "docqa-v37-b|v37|docqa --questions $V37_DOCQA_B --methods evidence --threads 1 --model $Q --out acc/docqa-v37-own-b-$Q"
    local half range
    for cell in "${V37_HQA[@]}"; do
        IFS=: read -r folder length samples half range <<< "$cell"
        indices=$(seq -s, "${range%-*}" "${range#*-}")
        echo "hqa$length-v37-$half|v37-samples|--indices $indices -- bench hqa --lengths $length --samples $samples --methods evidence --threads 1 --data-seed 1127 --model $Q --out acc/$folder-v37-own-$half-$Q"
    done
    echo "docqa-v38-a|v38|docqa --questions $V38_DOCQA_A --methods evidence --threads 1 --model $Q --out acc/docqa-v38-own-a-$Q"
    echo "docqa-v38-b|v38|docqa --questions $V38_DOCQA_B --methods evidence --threads 1 --model $Q --out acc/docqa-v38-own-b-$Q"
    for cell in "${V37_HQA[@]}"; do  # the same halves
        IFS=: read -r folder length samples half range <<< "$cell"
        indices=$(seq -s, "${range%-*}" "${range#*-}")
        echo "hqa$length-v38-$half|v38-samples|--indices $indices -- bench hqa --lengths $length --samples $samples --methods evidence --threads 1 --data-seed 1127 --model $Q --out acc/$folder-v38-own-$half-$Q"
    done
    for cell in "${V40_HQA[@]}"; do
        IFS=: read -r half range <<< "$cell"
        indices=$(seq -s, "${range%-*}" "${range#*-}")
        echo "hqa50-v40-$half|v40-samples|--indices $indices -- bench hqa --lengths 50 --samples 48 --methods evidence --threads 1 --data-seed 1127 --model $Q --out acc/hqa50-seed1127-v40-own-$half-$Q"
    done
    # then the same samples with the chunk first (layout-default.md): whether several questions can share by default
    local read job folder_of layout
    for read in "ow:overwrite:" "cf:chunkfirst: --layout chunk-first"; do
        IFS=: read -r job folder_of layout <<< "$read"
        for cell in "${OW_HQA50[@]}"; do
            IFS=: read -r half range <<< "$cell"
            indices=$(seq -s, "${range%-*}" "${range#*-}")
            echo "hqa50-$job-$half|v7-samples|--indices $indices -- bench hqa --lengths 50 --samples 48 --methods overwrite$layout --threads 1 --data-seed 1127 --model $Q --out acc/hqa50-seed1127-$folder_of-own-$half-$Q"
        done
    done
    local overwrite=() d i
    for d in devref-epub gcc-testlog binutils-changelog; do
        for i in 01 02 03 04 05 06 07 08 09; do overwrite+=("$d-$i"); done
    done
    local first=1
    for q in "${overwrite[@]}"; do
        echo "ow-$q|v7|docqa --questions $q --methods overwrite --threads 1 --model $Q --out acc/docqa-ow-$q-$Q"
        if ((first)); then  # the 400-document cell is short: one worker takes it while the other reads
            echo "hqa400-v11|v11|hqa --lengths 400 --samples 32 --methods evidence --threads 1 --data-seed 1127 --model $Q --out acc/hqa400-seed1127-v11-$Q"
            echo "hqa400-base|v11|hqa --lengths 400 --samples 32 --methods bm25,closed-book --threads 1 --data-seed 1127 --model $Q --out acc/hqa400-seed1127-$Q"
            first=0
        fi
    done
}

setup() {
    mkdir -p "$sweeps"/{bin,acc,claim,done} /work/wt
    local f
    # a new machine resumes from the committed scores (v37's cell halves: while their cell is being read)
    for f in hqa400-seed1127-v11-$Q hqa400-seed1127-$Q {hqa50,hqa400}-seed1127-v3{7,8}-own-{a,b}-$Q docqa-v38-own-{a,b}-$Q hqa50-seed1127-{overwrite,chunkfirst,v40}-own-{a,b}-$Q; do
        if [ ! -d "$sweeps/acc/$f" ] && [ -e "$main/benchmarks/results/bench/$f/scores.jsonl" ]; then
            mkdir -p "$sweeps/acc/$f" && cp "$main/benchmarks/results/bench/$f"/{run.json,scores.jsonl} "$sweeps/acc/$f/"
        fi
    done
    [ -d /work/wt/v11 ] || git -C "$main" worktree add -q --detach /work/wt/v11 95a4fa1
    local job
    for job in "${FINISHED[@]}"; do touch "$sweeps/done/$job"; done
    [ -d /work/wt/v12 ] || git -C "$main" worktree add -q --detach /work/wt/v12 669972e
    if [ ! -d /work/wt/v7 ]; then
        git -C "$main" worktree add -q --detach /work/wt/v7 24fb49c
        git -C /work/wt/v7 -c user.name=sweeps -c user.email=sweeps@localhost cherry-pick 60dc942 >/dev/null
    fi
    local py
    py=$(command -v python)  # the environment memread's dependencies are installed in (activate it first)
    "$py" -c "import typer, llama_cpp" 2>/dev/null || { echo "$py lacks memread's dependencies" >&2; return 1; }
    [ -d /work/wt/v36 ] || git -C "$main" worktree add -q --detach /work/wt/v36 471ec86
    [ -d /work/wt/v37 ] || git -C "$main" worktree add -q --detach /work/wt/v37 2d022d3
    [ -d /work/wt/v38 ] || git -C "$main" worktree add -q --detach /work/wt/v38 38f013d
    [ -d /work/wt/v40 ] || git -C "$main" worktree add -q --detach /work/wt/v40 8ed7530
    for v in v7 v11 v12 v36 v37 v38 v40; do  # cwd must not hold another memread: the wrappers run from $sweeps
        printf '#!/usr/bin/env bash\nPYTHONPATH=/work/wt/%s exec %s -m memread "$@"\n' "$v" "$py" \
            > "$sweeps/bin/memread-$v"
        chmod +x "$sweeps/bin/memread-$v"
    done
    # a job's arguments follow "bench": this one drops it and runs bench_samples.py, which runs memread bench
    for v in v36 v37 v38 v40 v7; do  # v7 predates bench_samples.py: it runs v37's, which imports v7's memread
        printf '#!/usr/bin/env bash\nshift\nPYTHONPATH=/work/wt/%s exec %s /work/wt/%s/benchmarks/accuracy/bench_samples.py "$@"\n' \
            "$v" "$py" "$( [ $v = v7 ] && echo v37 || echo $v )" > "$sweeps/bin/memread-$v-samples"
        chmod +x "$sweeps/bin/memread-$v-samples"
    done
}

committed() {  # the docqa questions whose overwrite records results/bench already holds
    python - "$main/benchmarks/results/bench/docqa-$Q/scores.jsonl" <<'EOF2'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    record = json.loads(line) if line.strip() else {}
    if record.get("method") == "overwrite":
        print("ow-" + record["docqa"]["id"])
EOF2
}

work() {
    local worker=$1 name version args
    local have
    have=$(committed)
    while IFS='|' read -r name version args; do
        [ -e "$sweeps/done/$name" ] && continue
        grep -qx -- "$name" <<< "$have" && continue
        mkdir "$sweeps/claim/$name" 2>/dev/null || continue
        echo "[$(date -u +%FT%TZ)] $worker starts $name ($version)"
        # shellcheck disable=SC2086
        (cd "$sweeps" && "bin/memread-$version" bench $args)
        local status=$?
        if ((status == 0)); then
            touch "$sweeps/done/$name"
            echo "[$(date -u +%FT%TZ)] $worker finished $name"
        else  # left claimed: `rmdir $SWEEPS/claim/NAME` lets a worker take it again
            echo "[$(date -u +%FT%TZ)] $worker: $name stopped (exit $status); left claimed"
        fi
    done < <(jobs)
}

sync() {  # copy what has finished into results/bench and make the tables and the goal check again
    local bench=$main/benchmarks/results/bench f docqa=$main/benchmarks/results/bench/docqa-$Q
    for f in "$sweeps"/acc/docqa-ow-*-$Q; do  # a question's overwrite record joins the docqa folder
        [ -e "$f/scores.jsonl" ] || continue
        python - "$f/scores.jsonl" "$docqa/scores.jsonl" <<'EOF'
import json, sys
new, into = sys.argv[1], sys.argv[2]
have = {json.loads(line)["key"] for line in open(into, encoding="utf-8") if line.strip()}
add = [line for line in open(new, encoding="utf-8") if line.strip() and json.loads(line)["key"] not in have]
with open(into, "a", encoding="utf-8") as out:
    out.writelines(add)
EOF
    done
    for f in hqa400-seed1127-v11-$Q hqa400-seed1127-$Q; do
        [ -e "$sweeps/acc/$f/scores.jsonl" ] || continue
        mkdir -p "$bench/$f"
        cp "$sweeps/acc/$f"/{run.json,scores.jsonl} "$bench/$f/"
    done
    # v12 changes the collect step of one docqa question (read by v12 itself) and of no HotpotQA sample, v13 of
    # none: their folders are v11's records and that read (docqa-design.md, "Toward v12", "Toward v13")
    local carry="python -m benchmarks.accuracy.carry_records"
    chain() {  # chain PREFIX EARLIER LATER…: each later version's folder carries the one before's records
        local prefix=$1 earlier=$2 v
        shift 2
        for v in "$@"; do
            [ -e "$bench/$prefix-$earlier-$Q/scores.jsonl" ] || return 0
            (cd "$main" && $carry --earlier "$bench/$prefix-$earlier-$Q" --out "$bench/$prefix-$v-$Q") || return 1
            earlier=$v
        done
    }
    has_own() { [ -e "$sweeps/acc/docqa-$1-own-$Q/scores.jsonl" ]; }  # has_own V: V read some docqa questions itself
    own() {  # own EARLIER LATER: LATER's docqa folder, EARLIER's records and LATER's own reads
        (cd "$main" && $carry --earlier "$bench/docqa-$1-$Q" --own "$sweeps/acc/docqa-$2-own-$Q" --out "$bench/docqa-$2-$Q")
    }
    later() {  # later EARLIER LATER: a version that read its own docqa questions (none of HotpotQA's, whose
        # folders carry EARLIER's records), once it has read them
        has_own "$2" || return 0
        own "$1" "$2"
        local f
        for f in hqa50-seed1127 hqa400-seed1127; do
            chain "$f" "$1" "$2"
        done
    }
    # done once: a new machine keeps the committed folders
    has_own v12 && own v11 v12 && chain docqa v12 v13
    # v14 changes two held-out docqa questions' path (read by v14 at one thread, from a worktree of 60d06e5 with
    # bin/memread-v14) and no HotpotQA sample ("Toward v14")
    has_own v14 && own v13 v14
    # v15, v16 and v17 change no acceptance read (no acceptance sample is a list question; "Toward v15" to "v17")
    chain docqa v14 v15 v16 v17
    # v18 to v20 were not adopted; v21 changes four held-out docqa questions' collect step (read by v21 at one
    # thread, from a worktree of e185b5f with bin/memread-v21) and no HotpotQA sample ("Toward v20")
    has_own v21 && own v17 v21
    # v22 changes two held-out docqa questions' collect step (read by v22 the same way, a510b4c) ("Toward v22")
    has_own v22 && own v21 v22
    # v23 was not adopted; v24 changes one held-out docqa question's collect step (read by v24 the same way,
    # 64e080b) and no HotpotQA sample ("Toward v24")
    has_own v24 && own v22 v24
    # v25 changes no acceptance sample's collect step or count (its records are v24's, "Toward v25")
    # v26 changes no acceptance sample's answer (no held-out first, last or list question about parts)
    # v27 changes no acceptance sample either (no docqa or HotpotQA question asks how many times a word occurs)
    chain docqa v24 v25 v26 v27
    for f in hqa50-seed1127 hqa400-seed1127; do
        chain "$f" v11 v12 v13 v14 v15 v16 v17 v21 v22 v24 v25 v26 v27
    done
    # v28 to v30 were not adopted; v31 (fc905f4) reads in two hops the four design and two held-out docqa
    # questions that point back with "that <noun>", and takes a date in another form for the questions asking for
    # a date (one design, two held-out docqa questions; HotpotQA seed 1127: 5 samples at 50 documents, 3 at 400):
    # those docqa questions are read again by v31 (the design ones asking no date by v29, whose reads of them
    # v31's code repeats), the rest are v27's records. The 8 HotpotQA samples, read again by v31, were v27's reads
    # (the same prompt and reply tokens, calls and scores; on another CPU): v27's records stand for them
    # ("Toward v28" to "Toward v30")
    later v27 v31
    # v32 (716a93d): v31, a bridge found on a record's first line as much about the question as its record, and a
    # date question's date looked for as a date first; it reaches the same questions as v31, read again by v32
    # (docqa: the four held-out and four design ones; the 8 HotpotQA samples were v27's reads again) ("Toward v32")
    later v31 v32
    # v33 (10cc879): v32, and a second hop's round ends at its first answer in a passage holding its bridge; it
    # reaches only split questions: docqa's two held-out ones, read again by v33 (the four design ones read for
    # its terms), and no HotpotQA sample ("Toward v33")
    later v32 v33
    # v35 (b6b9563; v34 not adopted): v33, and a bracketed label kept with the lines it labels in a lookup; it
    # reaches the lookups of the three documents holding labels: docqa's 13 held-out ones, read again by v35, and
    # its 10 design ones read for its terms; no HotpotQA sample of seed 1127 holds a label line ("Toward v35")
    later v33 v35
    # v36 (471ec86): v35, and a lookup's round ends at an answer on a line holding nearly all the question; it
    # reaches three held-out and four design docqa questions, read again by v36, and 8 HotpotQA samples at 50
    # documents and 5 at 400, read again by v36 (bench_samples.py); its HotpotQA folders are made once all are
    # read ("Toward v36")
    has_own v36 && own v35 v36
    counted() { local method=$1; shift; cat "$@" 2>/dev/null | grep -c "\"method\": \"$method\""; }
    records() { counted evidence "$@"; }  # evidence records in these scores files
    halves_so_far() {  # a cell's halves being read: their records so far, committed, for setup to resume from
        local f
        for f in "$@"; do
            [ -e "$f/scores.jsonl" ] && mkdir -p "$bench/${f##*/}" && cp "$f"/{run.json,scores.jsonl} "$bench/${f##*/}/"
        done
        return 0
    }
    join_reads() {  # join_reads N EARLIER OUT PART…: OUT holds EARLIER's records, then each PART's own reads in
        # turn, once the PARTs hold N evidence records together (their partial copies then go); until then, their
        # records so far
        local n=$1 earlier=$2 out=$3 part joined scores=() i=0
        shift 3
        for part in "$@"; do scores+=("$part/scores.jsonl"); done
        if [ "$(records "${scores[@]}")" != "$n" ]; then
            halves_so_far "$@"
            return 0
        fi
        for part in "$@"; do
            i=$((i + 1))
            joined=$sweeps/acc/${out##*/}
            [ "$i" = "$#" ] && joined=$out || joined=${joined%-$Q}-$i-$Q
            (cd "$main" && $carry --earlier "$earlier" --own "$part" --out "$joined") || return 1
            earlier=$joined
        done
        for part in "$@"; do rm -rf "${bench:?}/${part##*/}"; done
    }
    local cell folder length samples indices
    for cell in "${V36_HQA[@]}"; do
        IFS=: read -r folder length samples indices <<< "$cell"
        indices=${indices//[^,]/}  # as many commas as samples, less one
        [ "$(records "$sweeps/acc/$folder-v36-own-$Q/scores.jsonl")" = "$(( ${#indices} + 1 ))" ] || continue
        (cd "$main" && $carry --earlier "$bench/$folder-v35-$Q" --own "$sweeps/acc/$folder-v36-own-$Q" \
            --out "$bench/$folder-v36-$Q")
    done
    # v37 (2d022d3): v36, a sentence opening with a connective kept with the one before, a list answer found as
    # the text lists it; it reads every acceptance sample again (two halves a cell) and the 20 design questions
    # (docqa-v37-design, its terms' reads); its folders are made once every read is in ("Toward v37")
    join_reads 45 "$bench/docqa-v36-$Q" "$bench/docqa-v37-$Q" "$sweeps/acc/docqa-v37-own-a-$Q" \
        "$sweeps/acc/docqa-v37-own-b-$Q" "$sweeps/acc/docqa-v37-design-$Q"
    for cell in hqa50-seed1127:48 hqa400-seed1127:32; do
        IFS=: read -r folder samples <<< "$cell"
        join_reads "$samples" "$bench/$folder-v36-$Q" "$bench/$folder-v37-$Q" "$sweeps/acc/$folder-v37-own-a-$Q" \
            "$sweeps/acc/$folder-v37-own-b-$Q"
    done
    # v38 (38f013d): its 20 docqa design reads are v37's (replayed with v38: the same passages and answers), the
    # 25 held-out ones its own; its HotpotQA folders as v37's. Made once every read is in; the halves so far until
    # then. The goal check reads it only once adopted ("Toward v38": none of the goal's met criteria unmet)
    for cell in docqa:25 hqa50-seed1127:48 hqa400-seed1127:32; do
        IFS=: read -r folder samples <<< "$cell"
        join_reads "$samples" "$bench/$folder-v37-$Q" "$bench/$folder-v38-$Q" "$sweeps/acc/$folder-v38-own-a-$Q" \
            "$sweeps/acc/$folder-v38-own-b-$Q"
    done
    # v39 (ba4160a): a rare identifier's passage counts as the best match. Its reach by code is one held-out docqa
    # question; the two held-out questions read in two hops are read again too (a bridge can be reached); no
    # HotpotQA sample ("Toward v39"). Read by hand from its worktree (docqa-v39-own-a: handbook-html-05 and
    # gcc-testlog-03, -b: octave-pdf-01; -design: the five reached design questions of its terms); its other
    # records are v38's
    join_reads 8 "$bench/docqa-v38-$Q" "$bench/docqa-v39-$Q" "$sweeps/acc/docqa-v39-own-a-$Q" \
        "$sweeps/acc/docqa-v39-own-b-$Q" "$sweeps/acc/docqa-v39-design-$Q"
    if [ -e "$bench/docqa-v39-$Q/scores.jsonl" ]; then
        chain hqa50-seed1127 v38 v39
        chain hqa400-seed1127 v38 v39
    fi
    # v40 (8ed7530): a round reads at most a quarter of a short document; it reads HotpotQA's 48 at 50 documents
    # again (two halves), and its docqa and 400-document folders carry v39's records (no reach, "Toward v40")
    join_reads 48 "$bench/hqa50-seed1127-v39-$Q" "$bench/hqa50-seed1127-v40-$Q" \
        "$sweeps/acc/hqa50-seed1127-v40-own-a-$Q" "$sweeps/acc/hqa50-seed1127-v40-own-b-$Q"
    if [ -e "$bench/hqa50-seed1127-v40-$Q/scores.jsonl" ]; then
        chain docqa v39 v40
        chain hqa400-seed1127 v39 v40
    fi
    # overwrite's 48 at 50 documents read on one CPU, in the papers' order and with the chunk first: one folder
    # once all are in, the halves so far until then
    local a b
    for v in overwrite chunkfirst; do
        a=$sweeps/acc/hqa50-seed1127-$v-own-a-$Q b=$sweeps/acc/hqa50-seed1127-$v-own-b-$Q
        if [ "$(counted overwrite "$a/scores.jsonl" "$b/scores.jsonl")" = 48 ]; then
            (cd "$main" && $carry --earlier "$a" --own "$b" --out "$bench/hqa50-seed1127-$v-$Q")
            rm -rf "$bench/${a##*/}" "$bench/${b##*/}"
        else
            halves_so_far "$a" "$b"
        fi
    done
    for f in "$docqa" "$bench"/{docqa,hqa50-seed1127,hqa400-seed1127}-v{12,13,14,15,16,17,21,22,24,25,26,27,31,32,33,35,36,37,38,39,40}-$Q "$bench"/hqa400-seed1127{-v11,}-$Q; do
        [ -e "$f/scores.jsonl" ] && (cd "$main" && python -m memread bench --report --out "$f" >/dev/null)
    done
    local candidate=v27 v
    for v in v31 v32 v33 v35 v36 v37 v38 v39 v40; do  # the latest version whose folders are made
        [ -e "$bench/docqa-$v-$Q/scores.jsonl" ] && [ -e "$bench/hqa50-seed1127-$v-$Q/scores.jsonl" ] &&
            [ -e "$bench/hqa400-seed1127-$v-$Q/scores.jsonl" ] && candidate=$v
    done
    (cd "$main" && python -m benchmarks.accuracy.goal35 --candidate $candidate --out benchmarks/results/goal-35-check.md)
}

case ${1:-} in
    setup) setup ;;
    work) work "${2:?which worker: a name of your choosing}" ;;
    sync) sync ;;
    jobs) jobs ;;
    *) echo "usage: $0 setup | work NAME | sync | jobs" >&2; exit 2 ;;
esac
