"""Decoding with a KV cache gives the same logits as recomputing the whole sequence at every step
(up to float32 rounding), so greedy decoding picks the very same tokens.

A causal model's output at position t depends only on tokens 0..t. The keys and values of the
earlier tokens therefore never change once computed, and a cache that keeps them lets each step
push only the new token through the model. This script builds small MiniMind models with random
weights in four layouts (MHA, GQA, MQA, and GQA with MiniMind3's q/k norm), and for a batch of
prompts runs greedy decoding two ways: `MiniMindForCausalLM.forward(..., past_key_values=cache,
use_cache=True)` one token at a time after a prefill of the prompt, and a fresh forward over the
whole sequence at every step (what `generate(use_cache=False)` does). It compares the logits of
every step and the chosen tokens, and checks `generate(use_cache=True)` against
`generate(use_cache=False)`.

Why it matters: the cache is an optimisation, not an approximation. Any difference beyond rounding
is a bug (module 07's exp5_pitfalls shows the usual ones).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

import minimind_ref as mm
from labkit import Experiment, int_in, print_table, random_minimind
from labkit.i18n import phrase

# float32 keeps about 7 significant digits; a logit of size ~5 that went through a few hundred
# roundings in a different order can move by ~1e-5. 1e-4 of the largest logit leaves a margin
# of 10x over that, and is 10,000x below what a real bug does (exp5_pitfalls: errors of ~1 to 10).
RELATIVE_TOLERANCE = 1e-4

MODEL = dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=8, vocab_size=256)  # the random models

LAYOUTS = {  # name -> config overrides: how many KV heads, and MiniMind3's q/k norm (phrase: shown translated)
    phrase("MHA (8 KV heads)"): dict(num_key_value_heads=8),
    phrase("GQA (2 KV heads)"): dict(num_key_value_heads=2),
    phrase("MQA (1 KV head)"): dict(num_key_value_heads=1),
    phrase("GQA + q/k norm"): dict(num_key_value_heads=2, qk_norm=True),
}


def add_arguments(parser):
    parser.add_argument("--prompt", type=int_in(1, 256), default=8, help="prompt length (default 8)")
    parser.add_argument("--new", type=int_in(2, 256), default=48, help="tokens to generate (default 48)")
    parser.add_argument("--batch", type=int_in(1, 64), default=2, help="prompts decoded together (default 2)")


MAX_RECOMPUTED = 2 ** 18  # --batch x --new x (--prompt + --new): the tokens recomputing runs through


def check_arguments(args):
    recomputed = args.batch * args.new * (args.prompt + args.new)
    if recomputed > MAX_RECOMPUTED:
        return (f"--batch x --new x (--prompt + --new) must be at most {MAX_RECOMPUTED}, got {args.batch} x "
                f"{args.new} x {args.prompt + args.new} = {recomputed}")
    return None


@torch.no_grad()
def decode_with_cache(model, prompt: torch.Tensor, new_tokens: int):
    """Greedy decoding: prefill the prompt once, then feed one token per step with the cache.
    Returns (new tokens [B, new], logits that chose them [B, new, V], the cache)."""
    out = model(prompt, use_cache=True)  # prefill: every prompt token at once, cache filled
    cache, logits = out.past_key_values, [out.logits[:, -1]]
    tokens = []
    for step in range(new_tokens):
        next_token = logits[-1].argmax(dim=-1)  # [B]
        tokens.append(next_token)
        if step == new_tokens - 1:
            break
        out = model(next_token[:, None], past_key_values=cache, use_cache=True)  # [B, 1] in
        logits.append(out.logits[:, -1])
    return torch.stack(tokens, 1), torch.stack(logits, 1), cache


@torch.no_grad()
def decode_by_recomputing(model, prompt: torch.Tensor, new_tokens: int):
    """Greedy decoding without a cache: a full forward over everything so far at every step."""
    sequence, logits = prompt, []
    for _ in range(new_tokens):
        step_logits = model(sequence).logits[:, -1]  # [B, V]: the whole sequence goes through again
        logits.append(step_logits)
        sequence = torch.cat([sequence, step_logits.argmax(dim=-1, keepdim=True)], dim=1)
    return sequence[:, prompt.shape[1]:], torch.stack(logits, 1)


def top2_gap(logits: torch.Tensor) -> float:
    """The smallest distance between the best and second-best logit over every step: how far a
    rounding difference would have to move a logit to change a greedy choice."""
    top = logits.topk(2, dim=-1).values
    return (top[..., 0] - top[..., 1]).min().item()


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    torch.set_num_threads(1)  # the machine may be shared; results do not depend on it

    base = dict(MODEL, max_position_embeddings=max(256, 2 * (args.prompt + args.new)))
    prompt = torch.randint(0, base["vocab_size"], (args.batch, args.prompt))
    print(f"{len(LAYOUTS)} random models: hidden 128, 4 layers, 8 query heads, vocabulary 256; "
          f"batch {args.batch}, prompt {args.prompt} tokens, {args.new} new tokens, seed {args.seed}")
    print()
    results, per_step = decode_every_layout(base, prompt, args.new, args.seed)
    claim_cached_equals_recomputed(exp, results, args.batch, args.new)
    draw_logit_error(exp, results, per_step, args.prompt, args.new)
    return exp.finish()


def decode_every_layout(base: dict, prompt, new: int, seed: int):
    """Each layout's random model, decoded with the cache and by recomputing everything: the logit
    differences, step by step, and whether the tokens agree (generate() both ways too)."""
    rows, per_step, results, gaps_cleared = [], {}, {}, True
    for index, (name, overrides) in enumerate(LAYOUTS.items()):
        model = random_minimind(mm.MiniMindConfig(**base, **overrides), seed=seed * 100 + index)
        cached_tokens, cached_logits, cache = decode_with_cache(model, prompt, new)
        recomputed_tokens, recomputed_logits = decode_by_recomputing(model, prompt, new)
        generated = {flag: model.generate(prompt, new, use_cache=flag)[:, prompt.shape[1]:] for flag in (True, False)}

        error = (cached_logits - recomputed_logits).abs()  # [B, new, V]
        scale = recomputed_logits.abs().max().item()
        per_step[name] = error.amax(dim=(0, 2))  # [new]
        same_tokens = torch.equal(cached_tokens, recomputed_tokens)
        same_generate = torch.equal(generated[True], generated[False]) and torch.equal(generated[True], cached_tokens)
        distinct = min(len(set(row.tolist())) for row in cached_tokens)
        results[name] = (error.max().item(), scale, same_tokens, same_generate)
        gap = top2_gap(recomputed_logits)
        gaps_cleared = gaps_cleared and error.max().item() < gap
        rows.append([name, error.max().item(), scale, gap, distinct,
                     phrase("yes") if same_tokens else phrase("NO"), phrase("yes") if same_generate else phrase("NO")])
        if index == 1:
            print(f"after decoding, the GQA model's cache: {cache}")
            print(f"  layer 0 keys: {tuple(cache.layer(0)[0].shape)} = [batch, kv_heads, positions, head_dim]")
            print()

    print_table(["layout", "max |logit diff|", "max |logit|", "min top-2 gap", "distinct tokens",
                 "same tokens", "generate equal"], rows, ["", ".1e", ".2f", ".1e", "", "", ""])
    print()
    print("'min top-2 gap': the closest call between the best and second-best logit over all steps.")
    if gaps_cleared:
        print("In every layout the largest logit difference is smaller than that gap, so rounding could")
        print("not have flipped a greedy choice; with a near tie, it could (no bug, but tokens would differ).")
    else:
        print("In some layout a logit difference reaches the top-2 gap: a near tie, where rounding alone")
        print("can flip a greedy choice.")
    print("'distinct tokens': different tokens in the least varied continuation (a non-trivial test).")
    print()
    return results, per_step


def claim_cached_equals_recomputed(exp, results: dict, batch: int, new: int) -> None:
    worst = max(err / max(scale, 1.0) for err, scale, _, _ in results.values())
    exp.claim(worst <= RELATIVE_TOLERANCE,
              f"cached and recomputed logits agree at every step of every layout to float32 rounding "
              f"(largest difference {worst:.1e} of the largest logit, tolerance {RELATIVE_TOLERANCE:.0e})")
    exp.claim(all(same for _, _, same, _ in results.values()),
              f"greedy decoding with the cache picks exactly the tokens that recomputation picks "
              f"({len(LAYOUTS)} layouts x {batch} prompts x {new} tokens)")
    exp.claim(all(same for _, _, _, same in results.values()),
              "generate(use_cache=True) and generate(use_cache=False) return identical sequences")



def draw_logit_error(exp, results: dict, per_step: dict, prompt_len: int, new: int) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.8))
    positions = range(prompt_len, prompt_len + new)
    for name, errors in per_step.items():
        ax.semilogy(positions, errors.clamp_min(1e-12).tolist(), ".-", label=name)
    ax.axhline(RELATIVE_TOLERANCE * max(s for _, s, _, _ in results.values()), color="k", ls=":",
               label="tolerance")
    ax.set(xlabel="position of the token being predicted", ylabel="max |cached - recomputed| logit",
           title="KV-cached decoding vs recomputing everything: rounding-level differences")
    ax.legend(fontsize=8)
    exp.save(fig, "logit_error")


if __name__ == "__main__":
    raise SystemExit(main())
