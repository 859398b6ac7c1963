"""Three mistakes break cached decoding while the code still runs: giving the new token RoPE
position 0 instead of its place after the cache, aligning the causal mask to the top left instead
of the bottom right, and dropping the padding mask of a left-padded batch after the prefill. Each
changes the logits by whole units and the greedy tokens within a few steps; each fix brings back
the uncached reference to float32 rounding.

Every broken decoder here is built from minimind_ref's public pieces, minimind_ref untouched:
- positions: `forward(new_token, past_key_values=cache, position_ids=0)`; fixed by leaving
  position_ids out (positions then continue from the cache) or passing past_len.
- mask alignment: the model's own blocks (`MiniMindBlock.forward`) run with an explicit mask,
  `torch.ones(T, S).tril()`, which is what torch's `is_causal=True` means for T queries and S keys:
  the one new query then sees key 0 only. Fixed with `minimind_ref.causal_mask(T, S)`, aligned to
  the bottom right (the new query sees every key).
- padding: a batch of a short, left-padded prompt and a long one; after a prefill with the
  attention mask, the decoding steps pass no mask, so the new tokens attend to the pad keys.
  Fixed by extending the mask with a 1 for every new token. Forgetting only to extend it (passing
  the prefill's mask again) is refused by minimind_ref with a message that says why. A mistake
  often blamed here is harmless with RoPE: positions that count the pads shift every position of
  a sequence by the same amount, which leaves every query-key distance, hence every score, as it
  was (up to rounding).

The reference is recomputation without a cache (`generate(use_cache=False)`, each prompt alone for
the padded batch). Errors are measured with teacher forcing: every decoder is fed the reference's
tokens, and its logits at each step are compared with the reference's.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

import minimind_ref as mm
from labkit import Experiment, int_in, print_table, random_minimind
from labkit.i18n import phrase

ROUNDING = 1e-4  # a correct decoder agrees with the reference to float32 rounding (exp1: ~1e-5)
BROKEN = 0.1  # a broken one is off by at least this much somewhere (observed: several units)


def add_arguments(parser):
    parser.add_argument("--new", type=int_in(2, 256), default=24, help="tokens to generate (default 24)")
    parser.add_argument("--prompt", type=int_in(1, 256), default=8, help="prompt length (default 8)")
    parser.add_argument("--pad", type=int_in(1, 256), default=6, help="left padding of the short prompt (default 6)")


POSITIONS = 512  # the random model's max_position_embeddings


def check_arguments(args):
    longest = max(args.prompt, args.prompt - args.prompt // 2 + args.pad)  # the padded batch's long prompt
    if longest + args.new > POSITIONS:
        return (f"the longest prompt (--prompt, or half of it plus --pad) plus --new must fit the model's "
                f"{POSITIONS} positions, got {longest} + {args.new}")
    return None


# ------------------------------------------------------------------ one decoding step, 4 ways


def blocks_forward(model, ids, cache, positions, attn_mask=None):
    """New tokens ids [B, T] through the model's own blocks, with the RoPE positions [T] and the
    attention mask ([1, 1, T, S] bool, or None for minimind_ref's causal default) chosen by hand.
    Returns logits [B, T, V]; the cache is updated in place, as in a forward."""
    inner = model.model
    cos, sin = inner.freqs_cos[positions], inner.freqs_sin[positions]  # [T, D] each
    hidden = inner.embed_tokens(ids)  # [B, T, C]
    for block in inner.layers:
        hidden, _ = block(hidden, (cos, sin), attn_mask, cache)
    return model.lm_head(inner.norm(hidden))


def step_right(model, token, cache):
    return model(token, past_key_values=cache, use_cache=True).logits[:, -1]


def step_position_zero(model, token, cache):
    """BROKEN: the new token gets RoPE position 0, as if it were the first token."""
    return model(token, past_key_values=cache, use_cache=True, position_ids=torch.zeros_like(token)).logits[:, -1]


def step_position_offset(model, token, cache):
    """FIXED: the new token's position is past_len, the number of tokens already cached."""
    past_len = cache.get_seq_length()
    positions = torch.full_like(token, past_len)
    return model(token, past_key_values=cache, use_cache=True, position_ids=positions).logits[:, -1]


def step_top_left_mask(model, token, cache):
    """BROKEN: causal mask aligned to the top left (torch's is_causal for T < S)."""
    past_len, new = cache.get_seq_length(), token.shape[1]
    mask = torch.ones(new, past_len + new, dtype=torch.bool).tril()[None, None]  # query 0 sees key 0
    return blocks_forward(model, token, cache, torch.arange(past_len, past_len + new), mask)[:, -1]


def step_bottom_right_mask(model, token, cache):
    """FIXED: causal mask aligned to the bottom right: query i sits at position past_len + i."""
    past_len, new = cache.get_seq_length(), token.shape[1]
    mask = mm.causal_mask(new, past_len + new)[None, None]
    return blocks_forward(model, token, cache, torch.arange(past_len, past_len + new), mask)[:, -1]


@torch.no_grad()
def decode(model, prompt, new_tokens, step, forced=None):
    """Greedy decoding (or teacher-forced with `forced` [B, new]) after a prefill: tokens [B, new]
    and the logits that chose each of them [B, new, V]."""
    out = model(prompt, use_cache=True)
    cache, logits, tokens = out.past_key_values, [out.logits[:, -1]], []
    for i in range(new_tokens):
        token = logits[-1].argmax(-1) if forced is None else forced[:, i]
        tokens.append(token)
        if i < new_tokens - 1:
            logits.append(step(model, token[:, None], cache))
    return torch.stack(tokens, 1), torch.stack(logits, 1)


# ---------------------------------------------------------------------- left-padded batches


@torch.no_grad()
def decode_padded(model, ids, mask, new_tokens, keep_mask=True, count_pads=False, forced=None):
    """Greedy decoding of a left-padded batch. The mask [B, S] marks real tokens with 1; positions
    count real tokens only (or, with count_pads, the pads too: the model's default positions).
    keep_mask=False is the bug: steps after the prefill pass no mask."""
    positions = (mask.cumsum(-1) - 1).clamp_min(0)  # [B, S]; pads get 0 (they are never attended)
    out = model(ids, attention_mask=mask, position_ids=None if count_pads else positions, use_cache=True)
    cache, logits, tokens = out.past_key_values, [out.logits[:, -1]], []
    next_position = None if count_pads else positions[:, -1:] + 1  # [B, 1]
    for i in range(new_tokens):
        token = logits[-1].argmax(-1) if forced is None else forced[:, i]
        tokens.append(token)
        if i == new_tokens - 1:
            break
        mask = torch.cat([mask, mask.new_ones(mask.shape[0], 1)], dim=-1)  # the new token is real
        out = model(token[:, None], attention_mask=mask if keep_mask else None, position_ids=next_position,
                    past_key_values=cache, use_cache=True)
        logits.append(out.logits[:, -1])
        next_position = None if count_pads else next_position + 1
    return torch.stack(tokens, 1), torch.stack(logits, 1)


def stale_mask_error(model, ids, mask) -> str:
    """What minimind_ref says when the mask is not extended: the prefill's mask passed again."""
    with torch.no_grad():
        cache = model(ids, attention_mask=mask, use_cache=True).past_key_values
        try:
            model(ids[:, -1:], attention_mask=mask, past_key_values=cache)
        except ValueError as error:
            return str(error)
    return ""


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    torch.set_num_threads(1)
    config = mm.MiniMindConfig(hidden_size=128, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
                               vocab_size=256, max_position_embeddings=POSITIONS)
    model = random_minimind(config, seed=args.seed)
    results, per_step = {}, {}
    single_sequence(model, args.prompt, args.new, results, per_step)
    unpadded_row, error_message = padded_batch(model, args.prompt, args.new, args.pad, results, per_step)
    print_pitfalls(results, unpadded_row, error_message, args.prompt, args.new, args.pad)
    claim_pitfalls(exp, results, unpadded_row, error_message)
    draw_errors(exp, results, per_step)
    return exp.finish()


def single_sequence(model, prompt_len: int, new: int, results: dict, per_step: dict) -> None:
    """Single sequence: positions and mask alignment, each decoder against decoding without a cache.
    Fills results (kind, tokens unlike the reference, largest logit error) and per_step, by decoder."""
    vocab = model.config.vocab_size
    prompt = torch.randint(0, vocab, (1, prompt_len))
    reference = model.generate(prompt, new, use_cache=False)[:, prompt_len:]  # [1, new]
    with torch.no_grad():
        reference_logits = model(torch.cat([prompt, reference], 1)).logits[:, prompt_len - 1:-1]
    decoders = {  # name -> (step, kind); names and kinds are shown (phrase: translated in Chinese)
        phrase("positions: new token at 0"): (step_position_zero, phrase("broken")),
        phrase("positions: new token at past_len"): (step_position_offset, phrase("fixed")),
        phrase("mask: top-left (torch is_causal)"): (step_top_left_mask, "broken"),
        phrase("mask: bottom-right causal_mask"): (step_bottom_right_mask, "fixed"),
        phrase("model default (forward with cache)"): (step_right, "fixed"),
    }
    for name, (step, kind) in decoders.items():
        tokens, _ = decode(model, prompt, new, step)
        _, logits = decode(model, prompt, new, step, forced=reference)
        error = (logits - reference_logits).abs().amax(dim=(0, 2))  # [new]
        results[name] = (kind, int((tokens != reference).sum()), error.max().item())
        per_step[name] = error



def padded_batch(model, prompt_len: int, new: int, pad: int, results: dict, per_step: dict):
    """A left-padded batch: the short prompt gets `pad` pad tokens (id 0) on the left. Fills results
    and per_step; returns the unpadded row's errors by decoder, and the refusal of a stale mask."""
    vocab = model.config.vocab_size
    short = torch.randint(1, vocab, (1, prompt_len - prompt_len // 2))
    long = torch.randint(1, vocab, (1, short.shape[1] + pad))
    ids = torch.cat([torch.cat([torch.zeros(1, pad, dtype=torch.long), short], 1), long])
    mask = torch.ones_like(ids)
    mask[0, :pad] = 0
    alone = [model.generate(p, new, use_cache=False)[:, p.shape[1]:] for p in (short, long)]
    with torch.no_grad():
        alone_logits = [model(torch.cat([p, a], 1)).logits[:, p.shape[1] - 1:-1] for p, a in zip((short, long), alone)]
    reference_batch, reference_batch_logits = torch.cat(alone), torch.cat(alone_logits)
    unpadded_row = {}
    for name, keep, count_pads, kind in ((phrase("padding: mask dropped after prefill"), False, False, "broken"),
                                         (phrase("padding: mask extended every step"), True, False, "fixed"),
                                         (phrase("padding: mask extended, positions count pads"), True, True,
                                          phrase("fine"))):
        tokens, _ = decode_padded(model, ids, mask, new, keep, count_pads)
        _, logits = decode_padded(model, ids, mask, new, keep, count_pads, forced=reference_batch)
        error = (logits - reference_batch_logits).abs().amax(dim=2)  # [B, new]
        results[name] = (kind, int((tokens != reference_batch).sum()), error.max().item())
        per_step[name] = error.amax(dim=0)
        unpadded_row[name] = (int((tokens[1] != reference_batch[1]).sum()), error[1].max().item())
    error_message = stale_mask_error(model, ids, mask)
    return unpadded_row, error_message


def print_pitfalls(results: dict, unpadded_row: dict, error_message: str, prompt_len: int, new: int,
                   pad: int) -> None:
    short = prompt_len - prompt_len // 2  # the padded row's prompt; the other is `pad` tokens longer
    rows = [[name, kind, wrong, err] for name, (kind, wrong, err) in results.items()]
    print(f"random model (hidden 128, 4 layers, 8 heads, 2 KV heads), prompt {prompt_len}, {new} new tokens; "
          f"padded batch: {short}-token prompt after {pad} pads, and a {short + pad}-token prompt")
    print()
    print_table(["decoder", "", "tokens unlike the reference", "max |logit diff| (teacher-forced)"],
                rows, ["", "", "", ".1e"])
    print()
    wrong, err = unpadded_row["padding: mask dropped after prefill"]
    print(f"With the mask dropped, the unpadded row still matches ({wrong} tokens differ, logits within {err:.1e}):")
    print("it has no pad keys to see. Only the padded row breaks.")
    print("Positions that count the pads change nothing but rounding: RoPE scores depend only on the distance")
    print("between query and key, and shifting every position of a sequence by the same amount keeps distances.")
    print(f"Passing the prefill's mask again (not extended) is refused:\n  ValueError: {error_message}")
    print()



def claim_pitfalls(exp, results: dict, unpadded_row: dict, error_message: str) -> None:
    for name, (kind, wrong, err) in results.items():
        if kind == "broken":
            exp.claim(wrong > 0 and err > BROKEN,
                      f"{name}: {wrong} of the generated tokens differ from the reference and the logits are "
                      f"off by up to {err:.2f} (must be > {BROKEN})")
        else:
            exp.claim(wrong == 0 and err < ROUNDING,
                      f"{name}: the same tokens as the reference, logits within {err:.1e} (must be < {ROUNDING:.0e})")
    exp.claim(unpadded_row["padding: mask dropped after prefill"][0] == 0,
              "dropping the mask leaves the unpadded sequence of the batch unharmed: only padding exposes it")
    exp.claim("mask must cover the cached tokens" in error_message,
              "a padding mask that was not extended is refused with a message naming the cached tokens")



def draw_errors(exp, results: dict, per_step: dict) -> None:
    fig, ax = plt.subplots(figsize=(8, 4))
    for name, error in per_step.items():
        kind = results[name][0]
        # one phrase per kind: "{name} ({kind})", values alone, would have no catalog entry
        label = {"broken": phrase(f"{name} (broken)"), "fixed": phrase(f"{name} (fixed)"),
                 "fine": phrase(f"{name} (fine)")}[kind]
        ax.semilogy(range(1, len(error) + 1), error.clamp_min(1e-9).tolist(), "-" if kind == "broken" else ":",
                    marker="o" if kind == "broken" else ".", ms=3, label=label)
    ax.axhline(ROUNDING, color="k", lw=0.8, ls="--")
    ax.set(title="max |logit - reference| at each decoding step (teacher-forced)", xlabel="new token",
           ylabel="logit error")
    ax.legend(fontsize=7, loc="center right")
    exp.save(fig, "errors")


if __name__ == "__main__":
    raise SystemExit(main())
