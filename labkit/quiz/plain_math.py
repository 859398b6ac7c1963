"""Formulas for a terminal: inline LaTeX as Unicode.

The quizzes are written for the notebook widget, which renders `$...$` with MathJax. A terminal
cannot, so `plain_formula` turns the simple formulas the quizzes use into what a reader would write
by hand (`\\theta_i = b^{-2i/d}` -> `θᵢ = b⁻²ⁱᐟᵈ`, `\\frac{1}{d}` -> `1/d`). A superscript or
subscript that Unicode has no small letters for keeps a plain `^(...)` or `_(...)`. The rest of a
quiz's Markdown (code, emphasis, links) is markdown.py's. Standard library only.
"""

from __future__ import annotations

import re

_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "eta": "η", "theta": "θ",
    "lambda": "λ", "mu": "μ", "pi": "π", "sigma": "σ", "tau": "τ", "phi": "φ", "omega": "ω",
    "Theta": "Θ", "Sigma": "Σ", "Delta": "Δ", "ell": "ℓ", "infty": "∞", "times": "×", "cdot": "·",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "sum": "Σ",
    "in": "∈", "to": "→", "rightarrow": "→", "leftarrow": "←", "dots": "…", "ldots": "…",
    "langle": "⟨", "rangle": "⟩", "pm": "±", "top": "ᵀ",
    "ln": "ln", "log": "log", "exp": "exp", "max": "max", "min": "min", "det": "det",
    ",": " ", ";": " ", "quad": " ", "!": "", "{": "{", "}": "}", "|": "‖", "%": "%", "_": "_",
}
_SUPER = dict(zip("0123456789+-=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVW/ᵀ",
                  "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᐟᵀ"))
_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
_WRAPPERS = ("mathrm", "text", "operatorname", "mathbf", "mathit", "textrm", "mathsf")


def plain_formula(tex: str) -> str:
    """One LaTeX formula (without its dollars) as Unicode text."""
    out = tex
    for _ in range(4):  # innermost first: \frac{\sqrt{d}}{2} needs two passes
        out = re.sub(r"\\(?:" + "|".join(_WRAPPERS) + r")\{([^{}]*)\}", r"\1", out)
        out = re.sub(r"\\sqrt\{([^{}]*)\}", lambda m: "√" + _grouped(m.group(1)), out)
        out = re.sub(r"\\t?frac\{([^{}]*)\}\{([^{}]*)\}",
                     lambda m: f"{_grouped(m.group(1))}/{_grouped(m.group(2))}", out)
    out = re.sub(r"\\(left|right|big|Big)\b", "", out)
    out = re.sub(r"\\([A-Za-z]+|[,;!{}|%_])", lambda m: _SYMBOLS.get(m.group(1), m.group(1)), out)
    out = re.sub(r"\{,\}", ",", out)  # 1{,}048{,}576
    for _ in range(3):  # e^{s - m_{new}}: the inner script first
        out = re.sub(r"([\^_])\{([^{}]*)\}", lambda m: _script(m.group(1), m.group(2)), out)
    out = re.sub(r"([\^_])([A-Za-z0-9])", lambda m: _script(m.group(1), m.group(2)), out)
    return re.sub(r"  +", " ", out.replace("{", "").replace("}", "")).strip()


def _grouped(part: str) -> str:
    """A numerator, denominator or root argument, in parentheses when it is more than one term."""
    part = part.strip()
    return f"({part})" if re.search(r"[\s+\-/]", part) and not part.startswith("(") else part


def _script(mark: str, body: str) -> str:
    table = _SUPER if mark == "^" else _SUB
    compact = body.replace(" ", "")
    if compact and all(char in table for char in compact):
        return "".join(table[char] for char in compact)
    return f"{mark}({body})" if len(body) > 1 else f"{mark}{body}"
