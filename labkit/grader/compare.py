"""Where a learner's results first differ from the reference's, and whether they are a planted mistake's.

`first_difference` walks the records of a stage in the order they were made (episode, layer,
call) and places the first difference as finely as the results allow: in the attention weights
(batch, query, head, key), else in the heads joined before `o_proj` (batch, query, head), else in
the output (batch, query). "First" means the earliest query position, then the lowest head and
key. In the backward stage the gradients come next, in the order the backward pass reaches them
(`GRADIENT_ORDER`: o_proj first, the input x last), each placed by head, row and column.
`same_behaviour` says whether two runs agree everywhere, errors included: that is how a
failing output is matched to an entry of the catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..i18n import phrase, tr
from ..numerics import distance, outside_tolerance
from .ladder import GENERATED, TOLERANCE, Call, Episode, Outcome, Raised, Records, call_label


@dataclass
class Difference:
    episode: str
    layer: int  # -1: the whole model
    call: str
    quantity: str  # "attention weights", "heads before o_proj", "output", "logits", "tokens", "error",
    # or "gradient of NAME" (NAME: x or a parameter)
    where: dict  # batch, query (absolute position), head, key, as far as known
    expected: float | None = None
    actual: float | None = None
    largest: dict | None = None  # quantity -> largest |actual - expected| over the compared entries
    tolerance: tuple | None = None
    error: str | None = None  # what the learner's code raised, or a shape problem, in words


def _bad(actual: torch.Tensor, expected: torch.Tensor, care: torch.Tensor | None, tolerance) -> torch.Tensor:
    """Entries outside the tolerance (labkit.numerics, the rule check() uses too), as a bool tensor."""
    far = outside_tolerance(actual, expected, *tolerance)
    if care is not None:
        # rows not compared (pad queries) must still be finite: a NaN there spreads in the next layer
        far = (far & care) | (~torch.isfinite(actual) & torch.isfinite(expected))
    return far


def _largest(actual, expected, care) -> float:
    """The largest |actual - expected| over the compared entries (inf where only one is finite)."""
    diff = distance(actual, expected)
    if care is not None:  # rows not compared count only where they are not finite
        diff = torch.where(care | ~torch.isfinite(actual), diff, torch.zeros_like(diff))
    return diff.max().item() if diff.numel() else 0.0


def _rows(call: Call | None, shape: torch.Size, layout: str) -> torch.Tensor | None:
    """The rows that are compared, broadcast to a result's shape ([B, T, C] or [B, H, T, S])."""
    if call is None or call.real is None:
        return None
    real = call.real
    return (real[:, None, :, None] if layout == "weights" else real[:, :, None]).expand(shape)


def _place(bad: torch.Tensor, layout: str, call: Call | None, head_dim: int | None) -> tuple[dict, tuple]:
    """Where the first bad entry is, in words (absolute query position), and its index."""
    start = call.first_position if call is not None else 0
    if layout == "weights":  # [B, H, T, S] -> first by (batch, query, head, key)
        b, q, h, k = (int(i) for i in bad.permute(0, 2, 1, 3).nonzero()[0])
        return {"batch": b, "query": start + q, "head": h, "key": k}, (b, h, q, k)
    b, q, c = (int(i) for i in bad.nonzero()[0])
    where = {"batch": b, "query": start + q}
    if layout == "merged" and head_dim:
        where["head"] = c // head_dim
    else:
        where["channel"] = c
    return where, (b, q, c)


# The order the backward pass computes them in: from the output back to the input.
GRADIENT_ORDER = ("o_proj.weight", "v_proj.weight", "q_norm.weight", "k_norm.weight", "q_proj.weight",
                  "k_proj.weight", "x")


def _place_gradient(bad: torch.Tensor, name: str, head_dim: int | None) -> tuple[dict, tuple]:
    """Where the first bad entry of a gradient is: a position for x, a head, row and column for a weight."""
    index = tuple(int(i) for i in bad.nonzero()[0])
    if name == "x":  # [B, T, C]
        return {"batch": index[0], "query": index[1], "channel": index[2]}, index
    if bad.dim() == 1:  # a norm's gain, [D]
        return {"dimension": index[0]}, index
    row, column = index  # nn.Linear's weight: [out_features, in_features]
    if name == "o_proj.weight" and head_dim:  # its inputs are the heads joined
        return {"row": row, "head": column // head_dim, "column": column}, index
    if head_dim:  # q, k, v: each output row belongs to one head
        return {"head": row // head_dim, "row": row, "column": column}, index
    return {"row": row, "column": column}, index


def compare_gradients(actual: dict, expected: dict, tolerance, head_dim: int | None, base: dict) -> Difference | None:
    """The first gradient, in the backward pass's order, that is missing or differs."""
    order = [n for n in GRADIENT_ORDER if n in expected] + sorted(set(expected) - set(GRADIENT_ORDER))
    largest, found = {}, None
    for name in order:
        got, want = actual.get(name), expected[name]
        quantity = f"gradient of {name}"
        if want is None:
            continue
        if got is None:
            if found is None:
                found = Difference(**base, quantity=quantity, where={}, error=tr(
                    "{name} receives no gradient: the output does not depend on it in the autograd graph "
                    "(a .detach(), .data or torch.no_grad() cuts the path from {name} to the output)", name=name))
            continue
        if got.shape != want.shape:
            if found is None:
                found = Difference(**base, quantity=quantity, where={},
                                   error=tr("the gradient of {name} has shape {shape}, expected {expected}", name=name,
                                            shape=tuple(got.shape), expected=tuple(want.shape)))
            continue
        bad = _bad(got, want, None, tolerance)
        largest[quantity] = _largest(got, want, None)
        if bad.any() and found is None:
            where, index = _place_gradient(bad, name, head_dim)
            found = Difference(**base, quantity=quantity, where=where, expected=want[index].item(),
                               actual=got[index].item())
    if found is not None:
        found.largest = largest
    return found


def compare_outcome(actual: Outcome, expected: Outcome, call: Call | None, dtype, head_dim: int | None,
                    episode: str, layer: int, label: str) -> Difference | None:
    """The first difference between one call's results, or None when they agree."""
    tolerance = TOLERANCE[dtype]
    base = dict(episode=episode, layer=layer, call=label, tolerance=tolerance)
    if not isinstance(actual.out, torch.Tensor) or actual.out.shape != expected.out.shape:
        shape = tuple(actual.out.shape) if isinstance(actual.out, torch.Tensor) else type(actual.out).__name__
        return Difference(**base, quantity="output", where={},
                          error=tr("the output has shape {shape}, expected {expected}", shape=shape,
                                   expected=tuple(expected.out.shape)))
    if actual.out.dtype != expected.out.dtype:
        return Difference(**base, quantity="output", where={},
                          error=tr("the output is {dtype}, expected {expected}, the dtype of x: the next block adds "
                                   "it to x, so give it x's dtype (.type_as(x), .to(x.dtype))",
                                   dtype=actual.out.dtype, expected=expected.out.dtype))
    largest = {}
    layouts = [(phrase("attention weights"), "weights", actual.weights, expected.weights),
               (phrase("heads before o_proj"), "merged", actual.merged, expected.merged),
               (phrase("output"), "output", actual.out, expected.out)]
    found = None
    for quantity, layout, got, want in layouts:
        if got is None or want is None:
            continue
        if got.shape != want.shape:
            if found is None:
                found = Difference(**base, quantity=quantity, where={},
                                   error=tr("the {quantity} have shape {shape}, expected {expected}",
                                            quantity=tr(quantity), shape=tuple(got.shape),
                                            expected=tuple(want.shape)))
            continue
        care = _rows(call, want.shape, layout)
        bad = _bad(got, want, care, tolerance)
        largest[quantity] = _largest(got, want, care)
        if bad.any() and found is None:
            where, index = _place(bad, layout, call, head_dim)
            found = Difference(**base, quantity=quantity, where=where, expected=want[index].item(),
                               actual=got[index].item())
    if found is None and expected.grads is not None:
        if actual.grads is None:
            return Difference(**base, quantity=phrase("gradients"), where={}, error=tr("no gradients were computed"))
        return compare_gradients(actual.grads, expected.grads, tolerance, head_dim, base)
    if found is not None:
        found.largest = largest
    return found


def first_difference(actual: Records, expected: Records, episodes: list[Episode],
                     head_dim: int | None) -> Difference | None:
    """The first record, in the order the stage ran them, where the learner's run differs."""
    for key, want in expected.items():
        e, layer, label = key
        name = episodes[e].label
        call = next((c for c in episodes[e].calls if c.label == call_label(label)), None)
        dtype = episodes[e].dtype
        got = actual.get(key)
        if got is None:  # the learner stopped earlier in this episode: its error is reported there
            raised = next((r for k, r in actual.items() if k[:2] == key[:2] and isinstance(r, Raised)), None)
            if raised is None:  # no result and no error: never a pass
                return Difference(name, layer, label, phrase("error"), {}, error=tr(
                    "no result was recorded for this call: the grader's records were changed while your code ran"))
            key_of = next(k for k, r in actual.items() if r is raised)
            return Difference(name, layer, key_of[2], phrase("error"), {}, error=raised.text)
        if isinstance(got, Raised):
            return Difference(name, layer, label, phrase("error"), {}, error=got.text)
        if isinstance(want, Raised):
            return Difference(name, layer, label, phrase("error"), {},
                              error=tr("the reference raised {error}", error=want.text))
        if label.startswith("generate"):
            difference = _token_difference(got.out, want.out, name, label)
        else:
            difference = compare_outcome(got, want, call, dtype, head_dim, name, layer, label)
            if difference is not None and label == "logits":  # [B, T, vocab]: the channel is a token id
                difference.quantity = phrase("logits")
                difference.where = {("token" if k == "channel" else k): v for k, v in difference.where.items()}
        if difference is not None:
            return difference
    return None


def _token_difference(got: torch.Tensor, want: torch.Tensor, episode: str, label: str) -> Difference | None:
    if got.shape != want.shape:
        return Difference(episode, -1, label, phrase("tokens"), {},
                          error=tr("generated ids of shape {shape}, expected {expected}", shape=tuple(got.shape),
                                   expected=tuple(want.shape)))
    differs = got != want
    if not differs.any():
        return None
    b, p = (int(i) for i in differs.nonzero()[0])
    prompt = got.shape[1] - GENERATED
    where = {"batch": b, "generated": tr("{number} of {count} (position {position})", number=p - prompt + 1,
                                         count=GENERATED, position=p)}
    return Difference(episode, -1, label, phrase("tokens"), where, expected=int(want[b, p]), actual=int(got[b, p]))


def same_behaviour(first: Records, second: Records, episodes: list[Episode]) -> bool:
    """True when two runs of a stage made the same calls with the same results (within the
    tolerance, NaN where the other has NaN) or raised the same error at the same call."""
    if first.keys() != second.keys():
        return False
    for key, a in first.items():
        b = second[key]
        if isinstance(a, Raised) or isinstance(b, Raised):
            if not (isinstance(a, Raised) and isinstance(b, Raised) and a.text == b.text):
                return False
            continue
        dtype = episodes[key[0]].dtype
        if (a.grads is None) != (b.grads is None) or (a.grads is not None and a.grads.keys() != b.grads.keys()):
            return False
        pairs = [(a.out, b.out), (a.weights, b.weights)]
        for name in (a.grads or {}):
            x, y = a.grads[name], b.grads[name]
            if (x is None) != (y is None):  # one path cut, the other not
                return False
            pairs.append((x, y))
        for x, y in pairs:
            if x is None or y is None:
                continue
            if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.shape != y.shape:
                return False
            if x.dtype in (torch.int64, torch.int32):
                if not torch.equal(x, y):
                    return False
                continue
            if outside_tolerance(x, y, *TOLERANCE[dtype]).any():
                return False
    return True
