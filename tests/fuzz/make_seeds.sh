#!/usr/bin/env bash
# Writes the generated seeds of the fuzz corpus (tests/fuzz/corpus/<reader>/seed-*) from the
# optpipe command: schedules of shipped instances (schedule/), their PyTorch CSV exports behind
# the three header bytes that pick fuzz/torch_csv_fuzz.cc's instance (torch_csv/), and exports of
# a solved cache (cache_import/). The hand-written seeds (hand-*) and the inputs of findings
# (finding-*) are not touched. Usage: tests/fuzz/make_seeds.sh [path/to/optpipe] (default
# build/optpipe). Run it again when a format changes; the corpus test (tests/fuzz_corpus_test.cc)
# then reads the new seeds.
set -euo pipefail
cd "$(dirname "$0")/../.."
optpipe=$(realpath "${1:-build/optpipe}")
corpus=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$corpus"/{instance,schedule,torch_csv,cache_import}

# Schedules: the best heuristic's of a few shipped instances (plain, unsplit, V, loop, offload,
# several offload levels) and a solver's (with status, bound, gap and solver fields).
for inst in instances/tiny-2x3.json instances/unsplit-4x8.json instances/v-4x8.json instances/loop-4x8.json \
            instances/offload-fast-pcie-4x8.json tests/data/conformance/c-off-2x3-levels.json; do
  name=$(basename "$inst" .json)
  "$optpipe" schedule "$inst" -o "$corpus/schedule/seed-$name.json" >/dev/null
done
"$optpipe" solve instances/tiny-2x3.json --no-cache -q --time-limit 5 -o "$corpus/schedule/seed-tiny-2x3-solved.json" >/dev/null

# PyTorch CSVs. The header bytes are printable: byte 0 '0'..'3' is 1..4 devices, byte 1 '0' '1'
# '2' one stage per device, V, loop; byte 2 '0'..'7' is 1..8 microbatches with a split backward,
# '8'..'?' 1..8 with a fused one. The instance written here is the one torch_csv_instance() builds.
torch_instance() {  # devices placement microbatches split -> instance JSON on stdout
  python3 - "$@" <<'PY'
import json, sys
D, p, m, split = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
S = D if p == 0 else 2 * D
dev = lambda s: s if p == 0 else ((s if s < D else 2 * D - 1 - s) if p == 1 else s % D)
print(json.dumps({"format": "optpipe-instance/1", "name": "torch-csv-fuzz", "microbatches": m,
  "split_backward": split, "comm": 0.1,
  "devices": [{"memory_limit": 1e12, "static_memory": 0} for _ in range(D)],
  "stages": [{"device": dev(s), "forward": 1.0 + 0.25 * (s % 3), "backward": 2.0, "weight": 1.0 if split else 0.0,
              "activation": 1e9, "weight_activation": 5e8 if split else 0.0} for s in range(S)]}))
PY
}
for spec in "1 0 1 1" "2 0 3 1" "4 0 8 1" "2 0 4 0" "2 1 4 1" "3 1 2 0" "2 2 4 1" "4 2 8 1"; do
  read -r D p m split <<<"$spec"
  torch_instance "$D" "$p" "$m" "$split" >"$tmp/i.json"
  "$optpipe" schedule "$tmp/i.json" -o "$tmp/s.json" >/dev/null
  header=$(printf "\\$(printf '%03o' $((48 + D - 1)))\\$(printf '%03o' $((48 + p)))\\$(printf '%03o' $((48 + (split == 1 ? 0 : 8) + m - 1)))")
  { printf '%s' "$header"; "$optpipe" export --format torch-csv --instance "$tmp/i.json" "$tmp/s.json"; } \
    >"$corpus/torch_csv/seed-$D-$p-$m-$split.csv"
done

# Cache exports: solved small instances (plain, unsplit, offload) as JSON lines and a JSON array.
for inst in instances/tiny-2x3.json tests/data/conformance/c-unsplit-2x3.json tests/data/conformance/c-off-2x2.json; do
  "$optpipe" solve "$inst" --cache "$tmp/c.sqlite" -q --time-limit 5 -o "$tmp/out.json" >/dev/null
done
"$optpipe" cache export "$tmp/e.jsonl" --cache "$tmp/c.sqlite" >/dev/null
"$optpipe" cache export "$tmp/e.json" --cache "$tmp/c.sqlite" >/dev/null
cp "$tmp/e.jsonl" "$corpus/cache_import/seed-three.jsonl"
cp "$tmp/e.json" "$corpus/cache_import/seed-three-array.json"
echo "make_seeds: wrote $(ls "$corpus"/*/seed-* | wc -l) seeds under $corpus"
