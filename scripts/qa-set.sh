#!/usr/bin/env bash
# Writes the question sets the project ships for answer-quality runs (docs/quality.md):
#   scenarios/data/qa.jsonl         300 questions with exact numeric references: 200
#                                   arithmetic ("What is 17 + 25?"), 100 letter counts
#                                   ('How many letters are in the word "planet"?');
#   scenarios/data/qa-choice.jsonl  60 multiple-choice questions (`choices`, a `reference`
#                                   letter): which lettered number is the largest.
# Deterministic: a fixed linear congruential generator, no clock, no locale; running it again
# writes the same bytes. The embedded simulator works these questions out itself
# (`answer-accuracy`), so its answers can be made right or wrong at a chosen rate.
#
#   scripts/qa-set.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
awk '
# Park-Miller: every product stays below 2^53, so any awk computes it exactly.
function rnd(n) { state = (state * 16807) % 2147483647; return int(state / 7) % n }
BEGIN {
    state = 38
    split("planet river garden window silver orange market castle bridge winter " \
          "summer forest pencil rabbit mirror island yellow engine candle ladder " \
          "harbor violin jacket butter meadow rocket travel simple number answer " \
          "quality measure stream server token latency model question letter word " \
          "mountain ocean desert valley thunder lantern compass anchor feather marble " \
          "orchard blanket cabinet kitchen library museum theater station village canyon " \
          "glacier volcano horizon sunrise shadow crystal diamond emerald sapphire ruby " \
          "tiger zebra giraffe dolphin penguin falcon sparrow turtle lizard beetle " \
          "cactus bamboo tulip daisy maple willow cedar spruce almond pepper", words, " ")
    nwords = 0; for (k in words) nwords++
    for (i = 0; i < 200; i++) {
        op = i % 3
        if (op == 0) { a = rnd(900) + 10; b = rnd(900) + 10; r = a + b; s = "+" }
        else if (op == 1) { a = rnd(900) + 100; b = rnd(100) + 1; r = a - b; s = "-" }
        else { a = rnd(90) + 2; b = rnd(30) + 2; r = a * b; s = "×" }
        printf "{\"prompt\": \"What is %d %s %d? Reply with the number.\", \"reference\": \"%d\"}\n", a, s, b, r > "scenarios/data/qa.jsonl"
    }
    for (i = 0; i < 100; i++) {
        w = words[(i % nwords) + 1]
        printf "{\"prompt\": \"How many letters are in the word \\\"%s\\\"? Reply with the number.\", \"reference\": \"%d\"}\n", w, length(w) > "scenarios/data/qa.jsonl"
    }
    for (i = 0; i < 60; i++) {
        n = 3 + rnd(3); best = -1; line = ""
        for (j = 0; j < n; j++) {
            do { v = rnd(500) + 1; dup = 0; for (k = 0; k < j; k++) if (vals[k] == v) dup = 1 } while (dup)
            vals[j] = v
            if (v > best) { best = v; letter = substr("ABCDEFGHIJ", j + 1, 1) }
            line = line (j ? ", " : "") "\"" v "\""
        }
        printf "{\"prompt\": \"Which of these numbers is the largest? Reply with its letter.\", \"choices\": [%s], \"reference\": \"%s\"}\n", line, letter > "scenarios/data/qa-choice.jsonl"
    }
}'
