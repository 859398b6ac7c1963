"""Every check of every notebook teaches: fed a typical wrong answer it names the likely mistake and
what to re-check, and gives none of the answer away (CONTRIBUTING.md, "A module": the notebook).

The check cells are run here, in-process, not the notebooks: each notebook's imports, the few
variables its check cells read (STAND_INS, built cheaply the way the notebook builds them), and
for each exercise the wrong answers of WRONG, written beside the check they fool, or taken from
the grader's catalogue of mistakes (labkit/grader/mistakes.py) where one fits. A find-the-bug
exercise is fed the learner copy's own broken code. Each notebook's check cells run in order in
one namespace, once per round of wrong answers, and every check must fail in some round.

What a failing check must say (`said_well`): its hint (the one for the mistake it names, when it
names one), and, in what it computed from the answer, no expected value, no expected entry, no
ratio or difference of two numbers, and no dump of an input.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import nbformat
import pytest
import torch

import labkit.checks as checks
from labkit.checks import STRICT_ENV, describe
from labkit.checks.describe import num
from labkit.checks.diagnosis import KINDS
from labkit.checks.texts import KEY, load_texts, texts_for
from labkit.course.student import student_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


@cache
def notebook(stem: str):
    return nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)


def check_cells(stem: str) -> list:
    """The cells right after an exercise or find-the-bug cell: the check cells, in order."""
    cells = notebook(stem).cells
    return [cells[i + 1] for i, cell in enumerate(cells) if "solution" in tags(cell)]


def check_calls(source: str) -> list[ast.Call]:
    return [node for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check"]


def keys_of(stem: str) -> list[str]:
    return [ast.literal_eval(call.args[0]) for cell in check_cells(stem) for call in check_calls(cell.source)]


# ------------------------------------------------------------------ every check has its texts


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_check_names_its_texts_by_key_and_holds_none(path):
    """A check call's first argument is its key, whose texts exist; the call holds no text of its
    own (the cell stays in the learner's copy); every entry of the module's checks.json is used by
    exactly one check of its notebook."""
    stem = path.stem
    problems = []
    for cell in check_cells(stem):
        for call in check_calls(cell.source):
            first = call.args[0] if call.args else None
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str) and KEY.match(first.value)):
                problems.append(f"cell {cell.id}: check's first argument must be a key 'NN/slug' written as a string")
            elif not first.value.startswith(stem[:2] + "/"):
                problems.append(f"cell {cell.id}: {first.value} belongs to another module")
            texts = [k.arg for k in call.keywords if k.arg not in ("cases", "atol", "rtol")]
            if texts:
                problems.append(f"cell {cell.id}: check(...) is given {texts}: texts live in checks.json")
    assert not problems, "\n".join(problems)
    keys = keys_of(stem)
    assert len(keys) == len(set(keys)), f"a key is used twice: {sorted(keys)}"
    entries = load_texts(ROOT / "modules" / stem / "checks.json")
    assert sorted(f"{stem[:2]}/{slug}" for slug in entries) == sorted(keys), (
        "modules/{stem}/checks.json and the notebook's checks differ: one entry per check")


SECTION = re.compile(r"\bsections? (\d+(?:\.\d+)?)(?: and (\d+(?:\.\d+)?))?")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_hint_sends_the_learner_to_a_section_that_exists(path):
    """'section 4' in a check's text of module NN is a numbered heading of notebook NN: a hint that
    points nowhere after the notebook is renumbered fails here."""
    headings = {m.group(1) for cell in notebook(path.stem).cells if cell.cell_type == "markdown"
                for m in re.finditer(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", cell.source, re.M)}
    wrong = []
    for slug, texts in load_texts(ROOT / "modules" / path.stem / "checks.json").items():
        for text in (texts.hint, *(hint for _, hint in texts.mistakes)):
            for match in SECTION.finditer(text):
                wrong += [f"{slug}: section {n}" for n in match.groups() if n and n not in headings]
    assert not wrong, f"hints name sections that notebooks/{path.name} does not have: {wrong}"


# ------------------------------------------------------------------- the learner's wrong answers


@dataclass
class Wrong:
    """A typical wrong answer to one exercise: `answer` takes the place of the learner's function
    (or class); `names` says which checks it must fail, and the kind of mistake each must name
    (None: no kind, so the check's general hint)."""
    answer: Any
    names: dict[str, str | None] = field(default_factory=dict)


BROKEN = "the learner copy's broken code"  # a find-the-bug exercise's wrong answer


def broken_code(stem: str, name: str) -> str:
    """The learner copy's own cell of a find-the-bug exercise: the broken version."""
    copy = student_notebook(notebook(stem), f"{stem}.ipynb")
    for cell in copy.cells:
        if "find-the-bug" in tags(cell) and re.search(rf"^(def|class) {name}\b", cell.source, re.M):
            return cell.source
    raise AssertionError(f"no find-the-bug cell defines {name} in {stem}")


def _linear_no_bias(x, weight, bias):
    return x @ weight.T


def _linear_wrong_side(x, weight, bias):
    return x @ weight + bias


def _importance_unmasked(x, a):  # forgets that row t may not see the tokens after t
    return torch.softmax(a.expand(x.shape[0], x.shape[0]), dim=-1) @ x


def _log_of_softmax(z):  # the log of a stable softmax: -inf where a weight underflows
    shifted = z - z.max(dim=-1, keepdim=True).values
    return torch.log(shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True))


def _distance_wrong_sign(q, k, v, slope):  # adds the penalty: far keys win
    back = (torch.arange(q.shape[0])[:, None] - torch.arange(q.shape[0])[None, :]).to(q.dtype)
    scores = q @ k.T / q.shape[-1] ** 0.5 + slope * back
    return torch.softmax(scores.masked_fill(back < 0, float("-inf")), dim=-1) @ v


def _cross_scaled_by_input(x, memory, q_weight, k_weight, v_weight):  # scales by C_x, not d
    q, k, v = x @ q_weight.T, memory @ k_weight.T, memory @ v_weight.T
    return torch.softmax(q @ k.T / x.shape[-1] ** 0.5, dim=-1) @ v


def _cosine_wrong_axis(queries, keys, values, sharpness):  # normalises across tokens
    unit_q = queries / queries.norm(dim=0, keepdim=True)
    unit_k = keys / keys.norm(dim=0, keepdim=True)
    return torch.softmax(sharpness * unit_q @ unit_k.T, dim=-1) @ values


def _fused_view_without_transpose(x, in_proj_weight, num_heads):
    batch, tokens, _ = x.shape
    q, k, v = (x @ in_proj_weight.T).chunk(3, dim=-1)
    return tuple(t.reshape(batch, num_heads, tokens, -1) for t in (q, k, v))


def _parameters_square(embed_dim, num_heads, kdim, vdim, bias):  # as if kdim = vdim = embed_dim
    return 4 * embed_dim * embed_dim + (4 * embed_dim if bias else 0)


def _contributions_wrong_blocks(attended, o_weight):  # reads the weight's columns as [D, H]
    heads, head_dim = attended.shape[1], attended.shape[-1]
    w_o = o_weight.view(o_weight.shape[0], head_dim, heads).transpose(1, 2)
    return torch.einsum("bhtd,chd->bhtc", attended, w_o)


def _grouped_interleaved(q, k, v):  # groups query heads j, j + H_kv, ...: not adjacent
    b, h, t, d = q.shape
    kv = k.shape[1]
    grouped = q.view(b, h // kv, kv, t, d).transpose(1, 2).reshape(b, kv, (h // kv) * t, d)
    out = torch.softmax(grouped @ k.transpose(-2, -1) / d ** 0.5, dim=-1) @ v
    return out.view(b, kv, h // kv, t, d).transpose(1, 2).reshape(b, h, t, d)


def _grouped_wrong_reshape_back(q, k, v):
    b, h, t, d = q.shape
    kv = k.shape[1]
    out = torch.softmax(q.reshape(b, kv, (h // kv) * t, d) @ k.transpose(-2, -1) / d ** 0.5, dim=-1) @ v
    return out.reshape(b, t, h, d).transpose(1, 2)


def _cache_bytes_all_heads(config, tokens, batch):  # counts query heads, not key/value heads
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    element = torch.empty((), dtype=getattr(torch, config.get("torch_dtype") or "float32")).element_size()
    return 2 * config["num_hidden_layers"] * heads * head_dim * element * tokens * batch


def _pool_strided(keys, groups):  # pools heads g, g + groups, ...: not adjacent
    b, kv, s, d = keys.shape
    return keys.view(b, kv // groups, groups, s, d).mean(dim=1)


def _latent_untransposed(weights, c_kv, w_uv):
    return (weights @ c_kv[:, None]) @ w_uv


def _prefix_lm_hidden_is_true(length, prefix_len):  # True = hidden, the other convention
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    return ~(causal | (torch.arange(length)[None, :] < prefix_len))


def _prefix_lm_one_more(length, prefix_len):
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    return causal | (torch.arange(length)[None, :] <= prefix_len)


def _packed_not_causal(doc_ids):
    return doc_ids[:, None] == doc_ids[None, :]


def _packed_hidden_is_true(doc_ids):
    T = doc_ids.shape[0]
    return ~((doc_ids[:, None] == doc_ids[None, :]) & torch.ones(T, T, dtype=torch.bool).tril())


def _window_one_too_wide(query_len, key_len, window, sinks):
    position = torch.arange(key_len - query_len, key_len)[:, None]
    key = torch.arange(key_len)[None, :]
    return (key <= position) & ((key >= position - window) | (key < sinks))


def _window_hidden_is_true(query_len, key_len, window, sinks):
    position = torch.arange(key_len - query_len, key_len)[:, None]
    key = torch.arange(key_len)[None, :]
    return ~((key <= position) & ((key > position - window) | (key < sinks)))


def _softmax_minus_inf(scores, visible):  # a row with nothing visible: 0/0
    return torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)


def _unrope_rotates_again(x_rot, cos, sin):
    half = x_rot.shape[-1] // 2
    return x_rot * cos + torch.cat((-x_rot[..., half:], x_rot[..., :half]), dim=-1) * sin


def _unrope_identity(x_rot, cos, sin):
    return x_rot


def _interleaved_full_table(x, cos, sin):  # the rotate-half table's columns used as they stand
    turned = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)
    return x * cos + turned * sin


def _partial_pairs_of_the_head(x, cos, sin):  # pairs (i, i + D/2) of the whole head
    rotary, half = cos.shape[-1], x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return torch.cat([x[..., :rotary] * cos + rotated[..., :rotary] * sin, x[..., rotary:]], dim=-1)


def _yarn_ramp_reversed(dim, base, factor, beta_fast, beta_slow, original_max):
    import math

    def pair_index(turns):
        return dim * math.log(original_max / (turns * 2 * math.pi)) / (2 * math.log(base))
    low = max(math.floor(pair_index(beta_fast)), 0)
    high = min(math.ceil(pair_index(beta_slow)), dim // 2 - 1)
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / max(high - low, 0.001), 0.0, 1.0)
    return ramp + (1 - ramp) / factor


def _context_all_heads(config, dtype, budget_bytes, batch=1):
    element = torch.empty((), dtype=dtype).element_size()
    per_token = 2 * config.num_hidden_layers * config.num_attention_heads * config.head_dim * element
    return budget_bytes // (per_token * batch)


def _cache_whole_storage(storage_k, storage_v, length, k, v):
    end = length + k.shape[2]
    storage_k[:, :, length:end] = k
    storage_v[:, :, length:end] = v
    return storage_k, storage_v, end


def _cache_by_cat(storage_k, storage_v, length, k, v):  # right values, a copy of the whole cache
    keys = torch.cat([storage_k[:, :, :length], k], dim=2)
    values = torch.cat([storage_v[:, :, :length], v], dim=2)
    return keys, values, length + k.shape[2]


@torch.no_grad()
def _continue_sharing_the_cache(model, prefix_cache, suffixes, new_tokens):  # no copy per suffix
    answers = []
    for suffix in suffixes:
        out = model(suffix, past_key_values=prefix_cache, use_cache=True)
        tokens = []
        for _ in range(new_tokens):
            tokens.append(out.logits[:, -1].argmax(dim=-1, keepdim=True))
            out = model(tokens[-1], past_key_values=prefix_cache, use_cache=True)
        answers.append(torch.cat(tokens, dim=1))
    return answers


@torch.no_grad()
def _continue_recomputing_the_suffix(model, prefix_cache, suffixes, new_tokens):  # right, but wide
    import copy

    answers = []
    for suffix in suffixes:
        ids = suffix
        for _ in range(new_tokens):
            logits = model(ids, past_key_values=copy.deepcopy(prefix_cache), use_cache=True).logits
            ids = torch.cat([ids, logits[:, -1].argmax(dim=-1, keepdim=True)], dim=1)
        answers.append(ids[:, suffix.shape[1]:])
    return answers


def _online_minus_inf(scores, values, visible, tile):  # exp(-inf - (-inf)) on a hidden tile
    m, l, acc = torch.tensor(-float("inf")), torch.tensor(0.0), torch.zeros(values.shape[1])
    for start in range(0, len(scores), tile):
        s = scores[start:start + tile].masked_fill(~visible[start:start + tile], -float("inf"))
        m_new = torch.maximum(m, s.max())
        shrink, p = torch.exp(m - m_new), torch.exp(s - m_new)
        l, acc, m = l * shrink + p.sum(), acc * shrink + p @ values[start:start + tile], m_new
    return acc / l


def _merge_average(o1, lse1, o2, lse2):
    return (o1 + o2) / 2, torch.logaddexp(lse1, lse2)


def _merge_swapped(o1, lse1, o2, lse2):
    lse = torch.logaddexp(lse1, lse2)
    return lse, torch.exp(lse1 - lse).unsqueeze(-1) * o1 + torch.exp(lse2 - lse).unsqueeze(-1) * o2


def _tile_kind_square(row_start, row_end, key_start, key_end, T, S):  # forgets the offset S - T
    if key_start > row_end - 1:
        return "skip"
    if key_end - 1 <= row_start:
        return "full"
    return "mask"


def _roles_mixed_up():
    return {"previous": (1, 2), "induction": [(1, 0)], "sink": (0, 1)}


def _score_first_occurrence_only(weights, ids):
    totals, count = torch.zeros(weights.shape[:-2]), 0
    for i in range(len(ids)):
        earlier = [j for j in range(i) if ids[j] == ids[i]]
        if earlier:
            totals = totals + weights[..., i, earlier[0] + 1]
            count += 1
    return totals / count


def _split_view_only(projected, heads):
    batch, seq_len, width = projected.shape
    return projected.reshape(batch, heads, seq_len, width // heads)


def _rms_without_gain(x, gain, eps):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + eps)).type_as(x)


def _rms_sum_not_mean(x, gain, eps):
    x32 = x.float()
    return gain * (x32 * torch.rsqrt(x32.pow(2).sum(dim=-1, keepdim=True) + eps)).type_as(x)


def _share_tiled(kv, n_rep):  # the grader's repeat_tiled
    return kv.repeat(1, n_rep, 1, 1)


def _scores_unscaled(q, k):  # the grader's unscaled_scores
    return q @ k.transpose(-2, -1)


def _scores_by_d(q, k):  # the grader's scaled_by_d
    return q @ k.transpose(-2, -1) / q.shape[-1]


def _visible_top_left(attn_mask, query_len, key_len):  # the grader's top_left_causal
    return attn_mask if attn_mask is not None else torch.ones(query_len, key_len, dtype=torch.bool).tril()


def _visible_hidden_is_true(attn_mask, query_len, key_len):
    if attn_mask is not None:
        return ~attn_mask
    return ~torch.ones(query_len, key_len, dtype=torch.bool).tril(key_len - query_len)


def _attend_minus_inf(scores, visible, v):  # the grader's minus_infinity_fill
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")).float(), dim=-1).type_as(scores)
    return weights @ v, weights


def _attend_minus_billion(scores, visible, v):  # the grader's minus_billion_fill: no float16
    weights = torch.softmax(scores.masked_fill(~visible, -1e9).float(), dim=-1).type_as(scores)
    weights = weights.masked_fill(~visible.any(dim=-1, keepdim=True), 0.0)
    return weights @ v, weights


def _merge_without_transpose(out):  # the grader's merge_without_transpose
    batch, heads, seq_len, head_dim = out.shape
    return out.reshape(batch, seq_len, heads * head_dim)


def _catalogue(name: str):
    from labkit.grader import mistakes

    return getattr(mistakes, name)


# exercise name -> its wrong answers. A name's answers are tried in rounds: round r uses each
# name's r-th answer (its last when it has fewer).
WRONG: dict[str, dict[str, list[Wrong]]] = {
    "00_start_here": {
        "linear": [Wrong(_linear_wrong_side, {"00/linear": None}), Wrong(_linear_no_bias, {"00/linear": None})],
    },
    "01_attention_basics": {
        "causal_attention": [Wrong(BROKEN, {"01/causal_attention": None})],
        "importance_average": [Wrong(_importance_unmasked, {"01/importance_average": None})],
        "stable_log_softmax": [Wrong(_log_of_softmax, {"01/stable_log_softmax": "not_finite"})],
        "distance_attention": [Wrong(_distance_wrong_sign, {"01/distance_attention": None})],
    },
    "02_qkv": {
        "qkv_heads": [Wrong(BROKEN, {"02/qkv_heads": None})],
        "cross_attention": [Wrong(_cross_scaled_by_input, {"02/cross_attention": None})],
        "cosine_lookup": [Wrong(_cosine_wrong_axis, {"02/cosine_lookup": None})],
    },
    "03_multi_head": {
        "multi_head_forward": [Wrong(BROKEN, {"03/multi_head_forward": None})],
        "fused_qkv_heads": [Wrong(_fused_view_without_transpose, {"03/fused_qkv_heads": "rearranged"})],
        "cross_attention_parameters": [Wrong(_parameters_square, {"03/cross_attention_parameters": None})],
        "head_contributions": [Wrong(_contributions_wrong_blocks, {"03/head_contributions": None})],
    },
    "04_gqa": {
        "gqa_attention": [Wrong(BROKEN, {"04/gqa_attention": None})],
        "grouped_query_attention": [Wrong(_grouped_interleaved, {"04/grouped_query_attention": None}),
                                    Wrong(_grouped_wrong_reshape_back,
                                          {"04/grouped_query_attention": "rearranged"})],
        "cache_bytes": [Wrong(_cache_bytes_all_heads, {"04/cache_bytes": None})],
        "pool_kv_cache": [Wrong(_pool_strided, {"04/pool_kv_cache": None})],
        "latent_values": [Wrong(_latent_untransposed, {"04/latent_values": None})],
    },
    "05_masking": {
        "attend_new_tokens": [Wrong(BROKEN, {"05/attend_new_tokens": None})],
        "prefix_lm_mask": [Wrong(_prefix_lm_hidden_is_true, {"05/prefix_lm_mask": "complement"}),
                           Wrong(_prefix_lm_one_more, {"05/prefix_lm_mask": None})],
        "packed_causal_mask": [Wrong(_packed_hidden_is_true, {"05/packed_causal_mask": "complement"}),
                               Wrong(_packed_not_causal, {"05/packed_causal_mask": None})],
        "window_with_sinks": [Wrong(_window_hidden_is_true, {"05/window_with_sinks": "complement"}),
                              Wrong(_window_one_too_wide, {"05/window_with_sinks": None})],
        "masked_softmax": [Wrong(_softmax_minus_inf, {"05/masked_softmax": "not_finite"})],
    },
    "06_rope": {
        "rope_attention": [Wrong(BROKEN, {"06/rope_attention": None})],
        "unrope": [Wrong(_unrope_identity, {"06/unrope": "input_returned"}),
                   Wrong(_unrope_rotates_again, {"06/unrope": None})],
        "rope_interleaved": [Wrong(_interleaved_full_table, {"06/rope_interleaved": None})],
        "partial_rope": [Wrong(_partial_pairs_of_the_head, {"06/partial_rope": None})],
        "yarn_scale": [Wrong(_yarn_ramp_reversed, {"06/yarn_scale": None})],
    },
    "07_kv_cache": {
        "prefill_in_chunks": [Wrong(BROKEN, {"07/prefill_in_chunks": None})],
        "longest_context": [Wrong(_context_all_heads, {"07/longest_context": None})],
        "write_into_cache": [Wrong(_cache_whole_storage, {"07/write_into_cache": None}),
                             Wrong(_cache_by_cat, {"07/write_into_cache_bytes": None})],
        "continue_after_prefix": [Wrong(_continue_sharing_the_cache, {"07/continue_after_prefix": None,
                                                                       "07/continue_after_prefix_cache": None}),
                                  Wrong(_continue_recomputing_the_suffix, {"07/continue_after_prefix_widest": None})],
    },
    "08_flash": {
        "tiled_attention": [Wrong(BROKEN, {"08/tiled_attention": None})],
        "masked_online_softmax": [Wrong(_online_minus_inf, {"08/masked_online_softmax": "not_finite"})],
        "merge": [Wrong(_merge_average, {"08/merge": None}), Wrong(_merge_swapped, {"08/merge": "permuted"})],
        "tile_kind": [Wrong(_tile_kind_square, {"08/tile_kind": None})],
    },
    "09_reading_heads": {
        "induction_score": [Wrong(BROKEN, {"09/induction_score": None})],
        "heads_by_role": [Wrong(_roles_mixed_up, {"09/previous_head": None, "09/induction_heads": None,
                                                  "09/sink_head": None})],
        "induction_score_by_tokens": [Wrong(_score_first_occurrence_only, {"09/induction_score_by_tokens": None})],
    },
    "10_capstone": {
        "split_heads": [Wrong(_split_view_only, {"10/split_heads": "rearranged"})],
        "rms_norm_heads": [Wrong(_rms_without_gain, {"10/rms_norm_heads": None}),
                           Wrong(_rms_sum_not_mean, {"10/rms_norm_heads": None})],
        "rope": [Wrong(lambda x, cos, sin: _catalogue("rotate_interleaved")(x, cos, sin).type_as(x),
                       {"10/rope": None})],
        "share_kv": [Wrong(_share_tiled, {"10/share_kv": "permuted"})],
        "attention_scores": [Wrong(_scores_unscaled, {"10/attention_scores": "scaled"}),
                             Wrong(_scores_by_d, {"10/attention_scores": "scaled"})],
        "visible_keys": [Wrong(_visible_hidden_is_true, {"10/visible_keys": "complement"}),
                         Wrong(_visible_top_left, {"10/visible_keys": None})],
        "attend": [Wrong(_attend_minus_inf, {"10/attend": "not_finite"}),
                   Wrong(_attend_minus_billion, {"10/attend_float16": None})],
        "merge_heads": [Wrong(_merge_without_transpose, {"10/merge_heads": "rearranged"})],
        "MyAttention": [Wrong(lambda: _catalogue("UnscaledScores"), {"10/my_attention": None})],
        "BlankAttention": [Wrong(lambda: _catalogue("ScaledByD"), {"10/blank_attention": None})],
    },
}
CLASSES = {"MyAttention", "BlankAttention"}  # their wrong answer is a planted class: call to get it


# ------------------------------------------------------------------------- the check cells' world


def _stand_ins(stem: str, space: dict) -> dict:
    """The variables a notebook's check cells read that no check cell defines, made as the notebook
    makes them (smaller where the size does not matter)."""
    mm = __import__("minimind_ref")
    g = torch.Generator().manual_seed(0)
    if stem == "00_start_here":
        return {"layer": torch.nn.Linear(512, 128)}
    if stem == "01_attention_basics":
        return dict(zip("QKV", (torch.randn(6, 4, generator=g) for _ in range(3))))
    if stem == "03_multi_head":
        config = mm.MiniMindConfig(hidden_size=16, num_attention_heads=2, num_key_value_heads=2)
        return {"layer": mm.Attention(config).eval(), "x": torch.randn(1, 5, 16, generator=g)}
    if stem == "04_gqa":
        from labkit import random_minimind

        config = mm.MiniMindConfig(hidden_size=64, num_hidden_layers=1, num_attention_heads=8,
                                   num_key_value_heads=8, vocab_size=32)
        mha = random_minimind(config)
        ids = torch.randint(0, 32, (4, 6), generator=g)
        with torch.no_grad():
            keys = mha(ids, use_cache=True).past_key_values.layer(0)[0]
        return {"mha": mha, "ids": ids, "mha_keys": keys, "c_kv": torch.randn(1, 5, 16, generator=g),
                "w_uv": torch.randn(4, 8, 16, generator=g)}
    if stem == "07_kv_cache":
        from labkit import random_minimind

        config = mm.MiniMindConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=256)
        return {"config": config, "model": random_minimind(config),
                "prompt": torch.randint(0, 256, (1, 8), generator=g)}
    if stem == "09_reading_heads":
        from labkit import load_tiny_model, tiny_heads

        model, tokenizer = load_tiny_model()
        ids = torch.tensor(tokenizer.encode("Zq8#mW!v2J" * 2))
        n = 4
        planted = torch.softmax(torch.randn(3, 2 * n + 1, 2 * n + 1, generator=g), dim=-1)
        return {"model": model, "tokenizer": tokenizer, "ids": ids, "n": n, "planted": planted,
                "weights": tiny_heads.attention_weights(model, ids)[0]}
    return {}


def _names(source: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}


@cache
def _world(stem: str) -> dict:
    """The notebook's imports that its check and find-the-bug cells use, and the stand-ins."""
    used = set().union(*(_names(cell.source) for cell in notebook(stem).cells
                         if cell.cell_type == "code" and ("solution" in tags(cell) or cell in check_cells(stem))))
    space: dict = {}
    for cell in notebook(stem).cells:
        if cell.cell_type != "code":
            continue
        for statement in ast.parse(cell.source).body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)) and \
                    {(a.asname or a.name).split(".")[0] for a in statement.names} & used:
                exec(compile(ast.Module([statement], []), stem, "exec"), space)
    space.update(_stand_ins(stem, space))
    return space


@dataclass
class Said:
    key: str
    result: Any
    got: Any  # the learner's output on the failing case (or the value checked)
    want: Any  # the expected output there
    prefix: str  # which case, and its inputs: said before the reason, made of no answer


def _recorder(said: list[Said]):
    """check() as the cells call it, remembering what each failing check compared."""
    def recording_check(name, got, expected, **kwargs):
        result = checks.check(name, got, expected, **kwargs)
        answer, want, prefix = got, expected, ""
        if not result.passed and kwargs.get("cases") is not None:
            number = re.search(r"for case (\d+) of", result.message)
            cases = list(kwargs["cases"])
            case = cases[int(number.group(1)) - 1] if number else None
            args = case if isinstance(case, tuple) else (case,)
            prefix = f"for case {number.group(1)} of {len(cases)}, {describe.inputs(args)}: "
            try:
                answer = got(*checks._fresh_copy(args))
            except Exception:
                answer = None  # it raised: the message says so, and holds no value of its own
            want = expected(*checks._fresh_copy(args)) if callable(expected) else expected[int(number.group(1)) - 1]
        said.append(Said(name, result, answer, want, prefix))
        return result
    return recording_check


def _run_round(stem: str, round_number: int) -> list[Said]:
    space = dict(_world(stem))
    said: list[Said] = []
    space["check"] = _recorder(said)
    for name, answers in WRONG[stem].items():
        answer = answers[min(round_number, len(answers) - 1)].answer
        if answer is BROKEN:
            exec(broken_code(stem, name), space)
        else:
            space[name] = answer() if name in CLASSES else answer
    for cell in check_cells(stem):
        exec(compile(cell.source, f"{stem}:{cell.id}", "exec"), space)
    return said


# ------------------------------------------------------------------------ what a check may say


NUMBER = re.compile(r"(?<![\w.])-?(?:\d+\.\d*|\.\d+|\d+)(?:e[+-]?\d+)?|-?inf|NaN")  # not the 1 of mat1


def _leaves(value: Any) -> list:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    if isinstance(value, torch.Tensor):
        if value.numel() > 4096 or value.is_complex():
            value = value.flatten()[:4096]
        return value.detach().double().flatten().tolist() if value.dtype != torch.bool else value.flatten().tolist()
    return [value]


def _texts(value: Any) -> set[str]:
    """How a check could write a value: as the learner's own values are written (num), and plain."""
    if isinstance(value, float):
        return {num(value), f"{value:.4g}", repr(value)}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return {repr(value), str(value)}
    if isinstance(value, int):
        return {str(value), f"{value:,}"}
    return {str(value)}


def said_well(said: Said, kind: str | None) -> list[str]:
    """What is wrong with what a failing check said (empty when nothing is)."""
    message = said.result.message
    problems = []
    texts = texts_for(said.key)
    hint = texts.hint_for(said.result.mistake) or texts.hint
    if f"Hint: {hint}" not in message:
        problems.append("it does not give the check's hint")
    if kind is not None and said.result.mistake != kind:
        problems.append(f"it names the mistake {said.result.mistake!r}, not {kind!r}")
    if kind is None and said.result.mistake is not None and not texts.hint_for(said.result.mistake):
        assert KINDS[said.result.mistake] in message
    computed = message.split(" — ", 1)[1].split(". Likely: ")[0].split(". Hint: ")[0]
    if "\n" in message or "tensor(" in message or "Parameter" in message or len(computed) > 400:
        problems.append("it dumps a value")
    computed = re.sub(r"\[[\d, ]*\]", "[]", computed.replace(said.prefix, ""))  # positions are no values
    computed = computed.split("your code raised ")[0]  # the learner's own error message, not the check's words
    own = set().union(*(_texts(leaf) for leaf in _leaves(said.got))) if said.got is not None else set()
    reported = {m.group(1) for m in re.finditer(r"difference,? (?:is )?(\S+?),? ", computed + " ")}
    expected_leaves = _leaves(said.want)
    small_value = isinstance(said.want, (bool, int, float, str)) or (
        isinstance(said.want, torch.Tensor) and said.want.numel() == 1)
    for leaf in expected_leaves:
        if isinstance(leaf, (bool, str)) or leaf is None:
            written = _texts(leaf) - own
            if small_value or isinstance(leaf, str):
                problems += [f"it gives the expected {leaf!r}" for text in written if text in computed]
            continue
        if not small_value and float(leaf).is_integer() and abs(leaf) < 1000:
            continue  # an index or a count reads the same: only values that show are looked for
        for token in NUMBER.findall(computed):
            if token in own or token in reported:
                continue
            if not small_value and not re.search(r"[.eaN]", token):
                continue  # a count ("16 of 24 values"): an entry of a tensor would be written as a float
            try:
                close = abs(float(token) - leaf) <= 5e-4 * max(abs(leaf), 1e-12)
            except (ValueError, OverflowError):
                close = False
            if close:
                problems.append(f"it gives an expected entry, {token}")
    got_leaves, want_leaves = _leaves(said.got) if said.got is not None else [], expected_leaves
    if small_value and len(got_leaves) == 1 and isinstance(got_leaves[0], (int, float)) \
            and not isinstance(got_leaves[0], bool) and isinstance(want_leaves[0], (int, float)):
        g, e = float(got_leaves[0]), float(want_leaves[0])
        for derived in ([g / e, g - e, e - g] if e else [g - e]) + ([e / g] if g else []):
            if _texts(derived) & set(NUMBER.findall(computed)) - own:
                problems.append(f"it gives a ratio or a difference, {derived:.4g}")
    return sorted(set(problems))


@pytest.fixture(autouse=True)
def lenient(monkeypatch):
    monkeypatch.delenv(STRICT_ENV, raising=False)


@pytest.mark.parametrize("stem", sorted(WRONG))
def test_a_wrong_answer_gets_its_hint_and_not_the_answer(stem, capsys):
    expected_keys = keys_of(stem)
    rounds = max(len(answers) for answers in WRONG[stem].values())
    failed: dict[str, list[Said]] = {}
    named: dict[str, set] = {}
    for round_number in range(rounds):
        for said in _run_round(stem, round_number):
            if not said.result.passed:
                failed.setdefault(said.key, []).append(said)
                named.setdefault(said.key, set()).add(said.result.mistake)
        capsys.readouterr()  # the verdicts and the grader's reports: judged here, not shown
    assert sorted(failed) == sorted(expected_keys), f"checks no wrong answer fools: {set(expected_keys) - set(failed)}"
    problems = []
    for name, answers in WRONG[stem].items():
        for round_number, wrong in enumerate(answers):
            for key, kind in wrong.names.items():
                if kind is not None and kind not in named.get(key, set()):
                    problems.append(f"{key}: {name}'s wrong answer {round_number + 1} is not named {kind!r}: "
                                    f"{named.get(key)}")
    for key, saids in failed.items():
        kinds = {kind for answers in WRONG[stem].values() for wrong in answers
                 for k, kind in wrong.names.items() if k == key}
        for said in saids:
            wanted = said.result.mistake if said.result.mistake in kinds else None
            problems += [f"{key}: {p}\n    {said.result.message}" for p in said_well(said, wanted)]
    assert not problems, "\n".join(problems)


def test_every_exercise_has_a_wrong_answer_here():
    """A new exercise gets its typical wrong answer here in the change that adds it."""
    for path in NOTEBOOKS:
        names = set()
        for cell in notebook(path.stem).cells:
            if "solution" in tags(cell):
                names |= set(re.findall(r"^(?:def|class) (\w+)", cell.source, re.M)) & (
                    set().union(*(_names(c.source) for c in check_cells(path.stem))))
        missing = names - set(WRONG.get(path.stem, {}))
        assert not missing, f"{path.name}: no wrong answer for {sorted(missing)}"


def test_the_judge_sees_a_check_that_gives_the_answer_away():
    """said_well itself: each way of giving the answer away, and a clean line, judged as they are."""
    hint = texts_for("05/prefix_lm_mask").hint

    def said(reason: str, got, want, tail: str = f". Hint: {hint}") -> list[str]:
        message = f"✗ prefix_lm_mask: not yet — {reason}{tail}"
        result = checks.CheckResult(False, "prefix_lm_mask", message, "05/prefix_lm_mask")
        return said_well(Said("05/prefix_lm_mask", result, got, want, ""), None)

    assert said("it is 5: not right", 5, 8) == []
    assert said("it is 5, expected 8", 5, 8) == ["it gives an expected entry, 8"]
    assert said("it is 5: not right, off by 3", 5, 8) == ["it gives a ratio or a difference, 3"]
    assert said("it is 5: 1.6 times too small", 5, 8) == ["it gives a ratio or a difference, 1.6"]
    assert said("it is 'mask', expected 'full'", "mask", "full") == ["it gives the expected 'full'"]
    values = torch.tensor([0.1875, 0.5, 0.3125, 0.0])
    assert said("1 of 4 values are outside the tolerance; the largest difference, 0.25, is at [1]",
                values + torch.tensor([0, 0.25, 0, 0]), values) == []
    assert said("1 of 4 values are outside the tolerance; expected 0.3125 at [2]", values * 2, values) == [
        "it gives an expected entry, 0.3125"]
    assert said("it is tensor([1., 2.])", torch.ones(2), values[:2]) == ["it dumps a value"]
    assert said("it is 5: not right", 5, 8, tail="") == ["it does not give the check's hint"]
