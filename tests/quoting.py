"""Numbers quoted in prose, checked as another machine would compute them.

A float that comes out of float32 arithmetic differs in its last bits from one CPU, BLAS or thread
count to another. A facts test that formats such a value and looks for the digits in a guide passes
on one machine and fails on another whenever the value sits near a rounding boundary. `quoted`
formats the value only after checking that every value within its spread formats the same; if one
does not, the guide quotes more digits than the machine can promise, and the test says so here,
before a learner's machine does (CONTRIBUTING.md, "Stored outputs that hold on every machine").
"""

from __future__ import annotations

# Results of float32 inference (a forward pass, a mean over prompts) agree across machines to
# about 1e-6 relative; this leaves a margin of ten.
INFERENCE_SPREAD = 1e-5


def quoted(value: float, spec: str, spread: float = INFERENCE_SPREAD) -> str:
    """format(value, spec), checked to be the same for every value within a relative `spread`."""
    text = format(value, spec)
    delta = abs(value) * spread
    for nearby in (value - delta, value + delta):
        if format(nearby, spec) != text:
            raise AssertionError(
                f"{value!r} is quoted as {text!r}, but a value within a relative {spread:g} of it, as another "
                f"machine may compute it, is quoted as {format(nearby, spec)!r}: quote fewer digits")
    return text
