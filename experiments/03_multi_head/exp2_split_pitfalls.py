"""Splitting a projection [B, T, H*D] into heads must be view(B, T, H, D).transpose(1, 2):
view(B, H, T, D) runs without complaint and hands each head features of the wrong tokens; .view on
the transposed tensor raises a RuntimeError; .reshape there works by silently copying.

A [B, T, H*D] tensor is stored token after token: token 0's H*D features, then token 1's, and so
on; within a token, head 0's D features come first, then head 1's. view(B, T, H, D) only names
the head inside each token's features (no copy); transpose(1, 2) then swaps the axes to [B, H, T, D]
by changing strides (no copy either). view(B, H, T, D) instead cuts the same memory into H
consecutive blocks of T*D numbers, so "head 0" gets the first T*D numbers: every head of the first
few tokens. The shapes are right, so nothing fails; only the numbers are wrong. Going back,
[B, H, T, D] -> transpose(1, 2) -> [B, T, H, D] is not contiguous: its H*D features per token are
not adjacent in memory, so .view(B, T, H*D) cannot express it and raises, while .reshape (and
.contiguous().view) copy it into new memory. This script labels every number with the token and
the feature it comes from, checks where each ends up, prints the error message, compares storage
pointers, and measures what the wrong split and the wrong merge do to the output of
minimind_ref's Attention layer.

Why it matters: a wrong split trains and runs; the loss is merely worse. Knowing which calls copy
also tells you where memory goes: MiniMind's Attention copies once, on the way out
(transpose(1, 2).reshape), and never on the way in.
"""

from __future__ import annotations

import torch

from labkit import Experiment, int_in, print_table, random_attention, relative_error, show_heatmaps
from labkit.i18n import phrase
from minimind_ref import Attention, MiniMindConfig, apply_rotary_pos_emb, precompute_freqs_cis

BROKEN = 1e-2  # "wrong": an output error of at least 1% of the output's size, far above rounding


def add_arguments(parser):
    parser.add_argument("--batch", type=int_in(1, 64), default=2, help="batch size B (default 2)")
    parser.add_argument("--tokens", type=int_in(2, 256), default=6, help="sequence length T (default 6)")
    parser.add_argument("--heads", type=int_in(2, 32), default=4, help="heads H; the figure draws each (default 4)")
    parser.add_argument("--head-dim", type=int_in(2, 256), default=8, help="width D of each head, even (default 8)")


MAX_HIDDEN = 4096  # H x D, the layer's width: its four C x C projections take 256 MiB
MAX_DRAWN = 8192  # T x H x D numbers, each written into the figure twice: about half a minute
MAX_SCORES = 2 ** 24  # B x H x T x T attention scores: 64 MiB


def check_arguments(args):
    B, T, H, D = args.batch, args.tokens, args.heads, args.head_dim
    if D % 2:
        return f"--head-dim must be even (RoPE rotates pairs), got {D}"
    if H * D > MAX_HIDDEN:
        return f"--heads x --head-dim must be at most {MAX_HIDDEN}, got {H} x {D} = {H * D}"
    if T * H * D > MAX_DRAWN:
        return (f"--tokens x --heads x --head-dim (the numbers the figure writes) must be at most {MAX_DRAWN}, "
                f"got {T} x {H} x {D} = {T * H * D}")
    if B * H * T * T > MAX_SCORES:
        return f"--batch x --heads x --tokens^2 must be at most {MAX_SCORES}, got {B} x {H} x {T}^2 = {B * H * T * T}"
    return None


# ------------------------------------------------------------------------------ the two splits


def split_right(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, T, H*D] -> [B, H, T, D]: name the heads inside each token, then move heads forward."""
    batch, tokens, width = x.shape
    return x.view(batch, tokens, heads, width // heads).transpose(1, 2)


def split_wrong(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, T, H*D] -> [B, H, T, D] by cutting memory into H blocks: the right shape, wrong numbers."""
    batch, tokens, width = x.shape
    return x.view(batch, heads, tokens, width // heads)


def merge_right(out: torch.Tensor) -> torch.Tensor:
    """[B, H, T, D] -> [B, T, H*D]: heads back inside each token (this reshape copies)."""
    batch, heads, tokens, dim = out.shape
    return out.transpose(1, 2).reshape(batch, tokens, heads * dim)


def merge_wrong(out: torch.Tensor) -> torch.Tensor:
    """[B, H, T, D] -> [B, T, H*D] without transposing back: the right shape, wrong numbers."""
    batch, heads, tokens, dim = out.shape
    return out.reshape(batch, tokens, heads * dim)


# ------------------------------------------------------------------------------ measurements


def labels(batch: int, tokens: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two [B, T, H*D] tensors: the token each number belongs to, and its feature index."""
    token = torch.arange(tokens)[None, :, None].expand(batch, tokens, width)
    feature = torch.arange(width)[None, None, :].expand(batch, tokens, width)
    return token.contiguous(), feature.contiguous()


def slots_right(token_split: torch.Tensor, feature_split: torch.Tensor) -> torch.Tensor:
    """[B, H, T] bool: does slot (head h, position t) hold token t's features h*D .. (h+1)*D - 1?"""
    _, heads, tokens, dim = token_split.shape
    want_token = torch.arange(tokens)[None, None, :, None]
    want_feature = (torch.arange(heads)[:, None, None] * dim + torch.arange(dim))[None]  # [1, H, 1, D]
    return ((token_split == want_token) & (feature_split == want_feature)).all(dim=-1)


def attention_with(layer: Attention, x: torch.Tensor, split, merge) -> torch.Tensor:
    """minimind_ref's Attention forward pass with the given split and merge. x [B, T, C] -> [B, T, C]."""
    heads = layer.num_heads
    q, k, v = (split(proj(x), heads) for proj in (layer.q_proj, layer.k_proj, layer.v_proj))  # [B, H, T, D]
    cos, sin = precompute_freqs_cis(layer.head_dim, x.shape[1])
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)  # [B, H, T, D]
    return layer.o_proj(merge(out))


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    B, T, H, D = args.batch, args.tokens, args.heads, args.head_dim
    token, feature = labels(B, T, H * D)
    right, wrong = where_the_numbers_go(token, feature, B, T, H, D)
    memory = which_calls_copy(B, T, H, D)
    errors = wrong_split_in_attention(B, T, H, D)
    claim_split(exp, right, wrong, memory, errors)
    draw_split(exp, token, H)
    return exp.finish()


def where_the_numbers_go(token, feature, B: int, T: int, H: int, D: int):
    """Which (head, position) slots hold the right token's right features, after each split."""
    right = slots_right(split_right(token, H), split_right(feature, H))
    wrong = slots_right(split_wrong(token, H), split_wrong(feature, H))
    head0_tokens = sorted(set(split_wrong(token, H)[0, 0].flatten().tolist()))
    print(f"x: [B, T, H*D] = [{B}, {T}, {H * D}], H = {H} heads of D = {D}. Each number labelled with its token "
          f"and feature.")
    print()
    print_table(["split", "slots (head, position) holding the right token's right features"], [
        ["view(B, T, H, D).transpose(1, 2)", phrase(f"{int(right.sum())} of {right.numel()}")],
        ["view(B, H, T, D)", phrase(f"{int(wrong.sum())} of {wrong.numel()}")],
    ])
    print(f"\nWith view(B, H, T, D), 'head 0' gets the first T*D = {T * D} numbers in memory: tokens "
          f"{head0_tokens}, with the features of every head, instead of features 0..{D - 1} of all {T} tokens.")
    print()
    return right, wrong


def which_calls_copy(B: int, T: int, H: int, D: int) -> dict:
    """Memory: which calls copy? On the way in, a projection's output x [B, T, H*D]; on the way
    out, attention's output out [B, H, T, D], freshly computed, hence contiguous."""
    x = torch.randn(B, T, H * D)
    heads_view = x.view(B, T, H, D)
    split = heads_view.transpose(1, 2)  # [B, H, T, D]: strides swapped, no copy
    out = torch.randn(B, H, T, D)
    back = out.transpose(1, 2)  # [B, T, H, D]: not contiguous
    try:
        back.view(B, T, H * D)
        view_error = None
    except RuntimeError as error:
        view_error = str(error)
    reshaped = back.reshape(B, T, H * D)  # works: copies
    contiguous_view = back.contiguous().view(B, T, H * D)  # the same copy, spelled out
    flat = out.reshape(B * H, T, D)  # reshape of a contiguous tensor: a view, no copy
    rows = []
    for name, t, source in [("x = q_proj(...)  [B, T, H*D]", x, x), ("x.view(B, T, H, D)", heads_view, x),
                            ("  .transpose(1, 2)  [B, H, T, D]", split, x),
                            ("out = attention  [B, H, T, D]", out, out),
                            ("out.transpose(1, 2)  [B, T, H, D]", back, out),
                            ("  .reshape(B, T, H*D)", reshaped, out),
                            ("  .contiguous().view(B, T, H*D)", contiguous_view, out),
                            ("out.reshape(B*H, T, D)", flat, out)]:
        rows.append([name, str(tuple(t.shape)), str(t.stride()), phrase("yes") if t.is_contiguous() else phrase("no"),
                     phrase("shared") if shares_storage(t, source) else phrase("NEW (copied)")])
    print_table(["tensor", "shape", "strides", "contiguous", "storage"], rows)
    print()
    print("out.transpose(1, 2).view(B, T, H*D) raises:" if view_error
          else "out.transpose(1, 2).view(B, T, H*D) did not raise.")
    if view_error:
        print(f"  RuntimeError: {view_error}")
    before = out[0, 1, 0, 0].item()  # head 1 of token 0: in the merged tensor, feature D of token 0
    reshaped[0, 0, D] = 1000.0  # a write into the copy ...
    copy_isolated = out[0, 1, 0, 0].item() == before
    back[0, 0, 1, 0] = 1000.0  # ... and into the transposed view: the same number out[0, 1, 0, 0]
    view_writes_through = out[0, 1, 0, 0].item() == 1000.0
    copied_bytes = reshaped.numel() * reshaped.element_size()
    print(f"Writing into the reshape's copy leaves out unchanged: {copy_isolated}; writing into the transposed "
          f"view changes out: {view_writes_through}. The copy took {copied_bytes} bytes, as many as out.")
    print()

    as_expected = (shares_storage(heads_view, x) and shares_storage(split, x) and shares_storage(back, out)
                   and shares_storage(flat, out) and not shares_storage(reshaped, out)
                   and not shares_storage(contiguous_view, out) and copy_isolated and view_writes_through)
    return {"view_error": view_error, "as_expected": as_expected}


def wrong_split_in_attention(B: int, T: int, H: int, D: int) -> dict:
    """What the wrong split and merge do to minimind_ref's Attention: each pair's relative error."""
    config = MiniMindConfig(hidden_size=H * D, num_attention_heads=H, num_key_value_heads=H,
                            num_hidden_layers=1, vocab_size=16, max_position_embeddings=T)
    layer = random_attention(config)  # projections N(0, 1/fan_in): attention maps far from uniform
    with torch.no_grad():
        cos, sin = precompute_freqs_cis(D, T)
        inputs = torch.randn(B, T, H * D)
        reference, _ = layer(inputs, (cos, sin))
        outputs = {(s.__name__, m.__name__): attention_with(layer, inputs, s, m)
                   for s in (split_right, split_wrong) for m in (merge_right, merge_wrong)}
    errors = {key: relative_error(out, reference) for key, out in outputs.items()}
    print_table(["split", "merge", "|output - Attention| / |Attention|"],
                [[s, m, e] for (s, m), e in errors.items()], ["", "", ".1e"])
    print()
    return errors


def claim_split(exp, right, wrong, memory: dict, errors: dict) -> None:
    exp.claim(bool(right.all()) and int(wrong.sum()) < wrong.numel() // 2,
              f"view(B, T, H, D).transpose(1, 2) puts every token's features in its head "
              f"({int(right.sum())}/{right.numel()} slots right); view(B, H, T, D) runs and gets "
              f"{wrong.numel() - int(wrong.sum())}/{wrong.numel()} slots wrong")
    exp.claim(memory["view_error"] is not None and "view size is not compatible" in memory["view_error"],
              "after transpose(1, 2), .view(B, T, H*D) raises a RuntimeError (view size is not compatible "
              "with input tensor's size and stride)")
    exp.claim(memory["as_expected"],
              "view and transpose share their input's storage, and so does reshape of a contiguous tensor; "
              "reshape after the transpose (like .contiguous()) silently copies: new storage, and writes to it "
              "do not reach the original")
    right_error = errors[("split_right", "merge_right")]
    wrong_errors = [e for key, e in errors.items() if key != ("split_right", "merge_right")]
    exp.claim(right_error <= 1e-5 and min(wrong_errors) > BROKEN,
              f"with minimind_ref's Attention weights, the right split and merge give its output (error "
              f"{right_error:.1e}); a wrong split, a wrong merge or both miss it by at least "
              f"{min(wrong_errors):.0%} of its size, with no error raised")



def draw_split(exp, token, H: int) -> None:
    fig = show_heatmaps(torch.stack([split_right(token, H)[0], split_wrong(token, H)[0]]),
                        titles=[[f"view + transpose, head {h}" for h in range(H)],
                                [f"view(B, H, T, D), head {h}" for h in range(H)]],
                        xlabel="feature within the head", ylabel="position in the head", annotate=True,
                        fmt=".0f", cmap="viridis",
                        suptitle="Which token each number of each head comes from (batch element 0)")
    exp.save(fig, "split")


if __name__ == "__main__":
    raise SystemExit(main())
