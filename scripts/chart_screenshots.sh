#!/usr/bin/env bash
# Remakes the chart screenshots in docs/ with headless Chromium: the README's two 8 x 24 charts
# (the demo's heuristic and solved schedules, whole and without the script), and windows onto the
# 16 x 64 and 32 x 128 charts as a browser shows them (the script's first view, views scrolled
# into the middle with the GPU names and time axis kept in view, the whole 32 x 128 schedule
# zoomed to fit). Each PNG is under 300 KiB (tests/chart_screenshots_test.cc checks). The schedules are tests/data/charts/ (how they were made: its README).
#   scripts/chart_screenshots.sh [OUT_DIR]     default docs/; OPTPIPE=path/to/optpipe, CHROMIUM=path/to/chromium
# Chromium is not in scripts/setup.sh: apt-get install chromium. Exits 2 when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs}
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [ -z "$chromium" ]; then
  echo "chart_screenshots.sh: no chromium (apt-get install chromium, or set CHROMIUM)" >&2
  exit 2
fi
optpipe=${OPTPIPE:-build/optpipe}
[ -x "$optpipe" ] || ./scripts/build.sh optpipe
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=tests/data/charts
g8=instances/gpt-8x24-tight.json
g16=instances/generated/scale-llama2-7b-16x64-2act.json
g32=instances/generated/scale-llama2-7b-32x128-2act.json

render() {  # INSTANCE SCHEDULE SVG [render options]
  "$optpipe" render "$1" "$data/$2" -o "$tmp/$3" "${@:4}" >/dev/null
}

size_of() {  # the SVG's width,height in whole px
  sed -n 's/^<svg [^>]* width="\([0-9.]*\)" height="\([0-9.]*\)".*/\1 \2/p' "$1" |
    awk '{ printf "%d,%d", $1 + 0.999, $2 + 0.999 }'
}

shot() {  # SVG PNG WIDTH,HEIGHT [URL fragment]
  local url="file://$tmp/$1${4:+#$4}"  # mktemp's path is absolute
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
    --user-data-dir="$tmp/profile" --window-size="$3" --screenshot="$out/$2" "$url" >/dev/null 2>&1
  echo "$out/$2: $3${4:+ #$4}, $(($(stat -c %s "$out/$2") / 1024)) KiB"
}

# The README's charts: the whole picture, as an <img> shows it (no script).
render "$g8" gpt-8x24-tight.schedule.json g8.svg --no-script
render "$g8" gpt-8x24-tight.solved.json g8s.svg --no-script
shot g8.svg gantt-gpt-8x24-tight.png "$(size_of "$tmp/g8.svg")"
shot g8s.svg gantt-gpt-8x24-tight-solved.png "$(size_of "$tmp/g8s.svg")"

# At scale, a 1600 x 1000 window: the middle of 16 x 64 with the names and the axis kept in view;
# 32 x 128's first view, its middle, and the whole schedule fitted to the window.
render "$g16" scale-llama2-7b-16x64-2act.schedule.json g16.svg
render "$g32" scale-llama2-7b-32x128-2act.schedule.json g32.svg
shot g16.svg gantt-scale-llama2-7b-16x64-2act-middle.png 1600,1000 "t=1500&gpu=8"
shot g32.svg gantt-scale-llama2-7b-32x128-2act.png 1600,1000
shot g32.svg gantt-scale-llama2-7b-32x128-2act-middle.png 1600,1000 "t=1600&gpu=16"
shot g32.svg gantt-scale-llama2-7b-32x128-2act-fit.png 1600,1000 "zoom=fit&gpu=12"
