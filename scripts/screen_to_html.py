#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A terminal screen with its colours (`tmux capture-pane -e -p`) as an HTML
page, for docs' screenshots (docs/top.md, "The screenshot"):

  tmux capture-pane -e -p > screen.txt
  scripts/screen_to_html.py screen.txt > screen.html
  chromium --headless --screenshot=shot.png --window-size=1300,720 screen.html

Understands the SGR sequences tmux writes: reset, bold, reverse, the eight
colours and their bright forms, 256-colour foregrounds, default colours."""
import html
import re
import sys

BASE = ["#1e1e1e", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5"]
BRIGHT = ["#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]
FG, BG = "#d4d4d4", "#1e1e1e"


def colour256(n):
    if n < 8:
        return BASE[n]
    if n < 16:
        return BRIGHT[n - 8]
    if n < 232:
        n -= 16
        return "#%02x%02x%02x" % tuple((0, 95, 135, 175, 215, 255)[c] for c in (n // 36, n // 6 % 6, n % 6))
    g = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (g, g, g)


def convert(text):
    state = {"fg": None, "bg": None, "bold": False, "rev": False}
    out = []
    for part in re.split(r"(\x1b\[[0-9;]*m)", text):
        m = re.fullmatch(r"\x1b\[([0-9;]*)m", part)
        if not m:
            if part:
                fg, bg = state["fg"] or FG, state["bg"] or BG
                if state["rev"]:
                    fg, bg = bg, fg
                style = f"color:{fg};background:{bg}" + (";font-weight:bold" if state["bold"] else "")
                out.append(f'<span style="{style}">{html.escape(part)}</span>')
            continue
        codes = [int(c) if c else 0 for c in m.group(1).split(";")] if m.group(1) else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                state = {"fg": None, "bg": None, "bold": False, "rev": False}
            elif c == 1:
                state["bold"] = True
            elif c == 22:
                state["bold"] = False
            elif c == 7:
                state["rev"] = True
            elif c == 27:
                state["rev"] = False
            elif 30 <= c <= 37:
                state["fg"] = BASE[c - 30]
            elif 90 <= c <= 97:
                state["fg"] = BRIGHT[c - 90]
            elif 40 <= c <= 47:
                state["bg"] = BASE[c - 40]
            elif c == 39:
                state["fg"] = None
            elif c == 49:
                state["bg"] = None
            elif c in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
                state["fg" if c == 38 else "bg"] = colour256(codes[i + 2])
                i += 2
            i += 1
    return ("<!doctype html><html><head><meta charset='utf-8'><style>body{margin:0;background:%s}"
            "pre{margin:8px;font:14px/1.25 'DejaVu Sans Mono',monospace;color:%s}</style></head>"
            "<body><pre>%s</pre></body></html>\n" % (BG, FG, "".join(out)))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        sys.stdout.write(convert(f.read()))
