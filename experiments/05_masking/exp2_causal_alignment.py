"""With fewer queries than keys, as when decoding after a KV cache, torch's `is_causal=True` puts
the causal mask at the top left, cutting each new token off from most of the past; decoding needs
it at the bottom right, which is what minimind_ref's `causal_mask` and both its attention paths use.

When T new tokens follow S - T cached ones, query i is the token at absolute position S - T + i and
may see keys 0 .. S - T + i (bottom right). torch's `is_causal=True` builds ones(T, S).tril(0)
instead: query i sees keys 0 .. i (top left). This script first reads the mask torch applies off
its output (zero queries give equal scores, so the weights are even over the visible keys; with
the identity matrix as values the output is the weights), then compares each way of attending
with the same T queries against the truth, the last T rows of causal attention over all S tokens
in float64. Last, it runs a small MiniMind model with a KV cache: a prompt, then a chunk of T new
tokens, once with minimind_ref's own masks and once with the top-left mask forced into every layer.

Why it matters: the top-left mask does not fail loudly. Its output has the right shape, finite
values and rows that sum to 1; the model simply reads the wrong tokens.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from labkit import EPS32, Experiment, int_in, print_table, show_heatmaps
from labkit.i18n import phrase
from minimind_ref import (
    KVCache,
    MiniMindConfig,
    MiniMindForCausalLM,
    causal_mask,
    fused_attention,
    scaled_dot_product_attention,
)


def add_arguments(parser):
    # the figure writes a number in each of its 2 x S/4 x S cells: at S = 256 that takes a minute
    parser.add_argument("--keys", type=int_in(3, 128), default=8, help="S, keys: cached + new tokens (default 8)")
    parser.add_argument("--head-dim", type=int_in(2, 512), default=16,
                        help="D, the width of each head, even (default 16)")


def check_arguments(args):
    if args.head_dim % 2:
        return f"--head-dim must be even (RoPE rotates pairs), got {args.head_dim}"
    return None


def top_left(query_len: int, key_len: int) -> torch.Tensor:
    """What torch's documentation gives for is_causal: query i sees keys 0 .. i. [T, S]"""
    return torch.ones(query_len, key_len, dtype=torch.bool).tril(diagonal=0)


def mask_torch_applies(query_len: int, key_len: int) -> torch.Tensor:
    """Read the mask off torch's output: q = 0 makes every visible key's weight 1 / (number
    visible), and v = identity [S, S] makes the output row equal to the weights. [T, S] bool"""
    q = torch.zeros(1, 1, query_len, key_len, dtype=torch.float64)
    k = torch.randn(1, 1, key_len, key_len, dtype=torch.float64)
    v = torch.eye(key_len, dtype=torch.float64)[None, None]
    weights = F.scaled_dot_product_attention(q, k, v, is_causal=True)[0, 0]  # [T, S]
    return weights > 0


def ways_to_attend(q, k, v):
    """Every way of attending with q [1, H, T, D] over k, v [1, H, S, D] that the script compares."""
    query_len, key_len = q.shape[-2], k.shape[-2]
    bottom_right = causal_mask(query_len, key_len)
    return {
        "torch SDPA, is_causal=True": F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "torch SDPA, attn_mask=causal_mask(T, S)": F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right),
        "torch SDPA, attn_mask=causal_lower_right(T, S)":
            F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(query_len, key_len)),
        "minimind_ref scaled_dot_product_attention, is_causal=True":
            scaled_dot_product_attention(q, k, v, is_causal=True),
        "minimind_ref fused_attention, is_causal=True": fused_attention(q, k, v, is_causal=True),
    }


def force_top_left(module, args):
    """A forward pre-hook for minimind_ref's Attention: replace the mask it was given with torch's
    top-left causal mask over the keys it is about to see (cached + new)."""
    x, position_embeddings, _mask, cache, *rest = args
    query_len = x.shape[1]
    key_len = query_len + (cache.get_seq_length(module.layer_idx) if cache is not None else 0)
    return (x, position_embeddings, top_left(query_len, key_len)[None, None], cache, *rest)


def chunk_logits(model, ids: torch.Tensor, new: int) -> torch.Tensor:
    """Prefill ids[:, :-new] into a KV cache, then feed the last `new` tokens in one call. [1, new, V]"""
    cache = KVCache(model.config, batch_size=1)
    with torch.no_grad():
        model(ids[:, :-new], past_key_values=cache)
        return model(ids[:, -new:], past_key_values=cache).logits


def build_model(hidden: int, vocab: int, max_len: int) -> MiniMindForCausalLM:
    """A small MiniMind with weights large enough (std 0.1) that attention maps are not uniform."""
    config = MiniMindConfig(hidden_size=hidden, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2, vocab_size=vocab, max_position_embeddings=max_len)
    model = MiniMindForCausalLM(config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if not name.endswith("norm.weight"):
                param.normal_(0.0, 0.1)
    return model.eval()


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    S, D = exp.args.keys, exp.args.head_dim
    query_lens = sorted({1, 2, S // 2, S})
    alignment = the_mask_torch_applies(S, query_lens)
    errors = every_way_of_attending(S, D, query_lens)
    model = a_model_with_a_kv_cache(S)
    claim_alignment(exp, S, query_lens, alignment, errors, model)
    draw_masks(exp, S)
    return exp.finish()


def the_mask_torch_applies(S: int, query_lens: list[int]) -> dict:
    """The mask torch's is_causal=True applies, read off its output: for each T, whether it is the
    top-left mask and whether it is the bottom-right one."""
    print(f"1. The mask torch's is_causal=True applies, read off its output (S = {S} keys):")
    print()
    rows, alignment = [], {}
    for T in query_lens:
        seen = mask_torch_applies(T, S)
        alignment[T] = (torch.equal(seen, top_left(T, S)), torch.equal(seen, causal_mask(T, S)))
        rows.append([T, S, " ".join(str(int(r.sum())) for r in seen),
                     " ".join(str(int(r.sum())) for r in causal_mask(T, S)),
                     phrase("yes") if alignment[T][0] else phrase("no"),
                     phrase("yes") if alignment[T][1] else phrase("no")])
    print_table(["T", "S", "keys seen per query (torch)", "keys decoding needs", "= top left", "= bottom right"],
                rows, ["", "", "", "", "", ""])
    print()
    return alignment


def every_way_of_attending(S: int, D: int, query_lens: list[int]) -> dict:
    """Every way of attending, against the truth: the last T rows of full causal attention."""
    q_all, k, v = (torch.randn(1, 2, S, D, dtype=torch.float64) for _ in range(3))
    truth = scaled_dot_product_attention(q_all, k, v, is_causal=True)  # [1, 2, S, D], square: no ambiguity
    q_all, k, v = q_all.float(), k.float(), v.float()
    scale = truth.abs().max().item()
    errors, rows = {}, []
    for T in query_lens:
        outputs = ways_to_attend(q_all[:, :, -T:], k, v)
        for name, out in outputs.items():
            error = (out.double() - truth[:, :, -T:]).abs().max().item() / scale
            errors[name, T] = error
            rows.append([T, name, error])
    print("2. The same T queries (the last T of S tokens), attended every way; "
          "error = max |out - truth| / max |truth|,")
    print("   truth = the last T rows of causal attention over all S tokens, float64:")
    print()
    print_table(["T", "way", "error"], rows, ["", "", ".1e"])
    print()
    return errors


def a_model_with_a_kv_cache(S: int) -> dict:
    """A model with a KV cache: a prompt, then a chunk of new tokens in one call, with minimind_ref's
    masks and with the top-left one forced into every layer."""
    vocab, new = 64, max(2, S // 2)
    model = build_model(hidden=64, vocab=vocab, max_len=4 * S)
    ids = torch.randint(0, vocab, (1, S))
    with torch.no_grad():
        full = model(ids).logits[:, -new:]  # one pass over all S tokens: the reference
    right = chunk_logits(model, ids, new)
    hooks = [layer.self_attn.register_forward_pre_hook(force_top_left) for layer in model.model.layers]
    try:
        wrong = chunk_logits(model, ids, new)
    finally:
        for hook in hooks:
            hook.remove()
    size = full.abs().max().item()
    right_error = (right - full).abs().max().item() / size
    wrong_error = (wrong - full).abs().max().item() / size
    right_tokens = int((right.argmax(-1) == full.argmax(-1)).sum())
    wrong_tokens = int((wrong.argmax(-1) == full.argmax(-1)).sum())
    print(f"3. MiniMind (2 layers, random weights), {S - new} tokens prefilled into the KV cache, then {new} new "
          f"tokens in one call; compared with one pass over all {S}:")
    print()
    print_table(["mask in every layer", "max |logits - full| / max |full|", "next tokens as the full pass"],
                [[phrase("minimind_ref's own (bottom right)"), right_error, phrase(f"{right_tokens} of {new}")],
                 [phrase("top left, as is_causal=True"), wrong_error, phrase(f"{wrong_tokens} of {new}")]],
                ["", ".1e", ""])
    print()
    return {"right_error": right_error, "wrong_error": wrong_error}


def claim_alignment(exp, S: int, query_lens: list[int], alignment: dict, errors: dict, model: dict) -> None:
    tol = 16 * EPS32  # float32 attention over at most a few dozen terms
    shorter = [T for T in query_lens if T < S]
    exp.claim(all(alignment[T][0] for T in query_lens) and not any(alignment[T][1] for T in shorter),
              f"torch's is_causal=True applies the top-left mask ones(T, S).tril(0), not the bottom-right one, "
              f"for every T < S tested ({', '.join(map(str, shorter))}); with T = 1 the new token sees only key 0")
    exp.claim(alignment[S][0] and alignment[S][1], "when T = S the two alignments are the same mask")
    worst_wrong = min(errors["torch SDPA, is_causal=True", T] for T in shorter)
    exp.claim(worst_wrong > 0.05,
              f"so is_causal=True with T < S is wrong: error at least {worst_wrong:.0%} of the output's size "
              f"for every T < S, while it is right for T = S ({errors['torch SDPA, is_causal=True', S]:.1e})")
    worst_right = max(error for (name, _), error in errors.items() if name != "torch SDPA, is_causal=True")
    exp.claim(worst_right <= tol,
              f"a bottom-right mask gets it right for every T: causal_mask(T, S) or torch's causal_lower_right "
              f"as attn_mask, and minimind_ref's is_causal=True on both paths (largest error {worst_right:.1e}, "
              f"tolerance {tol:.1e})")
    right_error, wrong_error = model["right_error"], model["wrong_error"]
    exp.claim(right_error <= 1e-5 and wrong_error > 1e-2,
              f"in a model with a KV cache, minimind_ref's masks reproduce the full pass (logit error "
              f"{right_error:.1e}); the top-left mask moves the logits by {wrong_error:.0%} of their size")



def draw_masks(exp, S: int) -> None:
    T = max(1, S // 4)
    maps = torch.stack([top_left(T, S), causal_mask(T, S)]).float()
    fig = show_heatmaps(maps, x_labels=[f"k{j}" for j in range(S)],
                        y_labels=[f"q{S - T + i}" for i in range(T)],
                        titles=["torch is_causal=True: top left", "decoding needs: bottom right"],
                        suptitle=f"{T} new tokens after {S - T} cached: which keys each may see (1 = visible)",
                        annotate=True, fmt=".0f", colorbar=False)
    exp.save(fig, "masks")


if __name__ == "__main__":
    raise SystemExit(main())
