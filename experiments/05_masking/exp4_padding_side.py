"""Batched decoding needs left padding: a left-padded batch, with its attention mask, generates
exactly what each prompt generates alone, while with right padding the short prompts' next tokens
are predicted at a pad position and appended after the pads, and come out wrong.

Prompts of different lengths share one batch tensor only if the short ones are padded. Every row
then gets its next token from the last column and writes it into the next column. With left
padding the last column is each prompt's own last token; with right padding it is a pad token
for every prompt shorter than the longest. The script trains the causal model of
exp3_training_without_mask (a word, noise, the same word again: the model learns to repeat the
word) and gives it prompts of 8 to 11 tokens that stop inside the word's second copy, so the right
continuation is known. It decodes them one at a time, as a left-padded batch through
`MiniMindForCausalLM.generate(..., attention_mask=...)` (which also starts each row's positions at
its first real token), and as a right-padded batch with the same greedy loop reading the last
column, and compares the tokens.

Why it matters: right padding does not raise an error. The batch has the right shape, the pad keys
are masked, and the short rows silently continue from a pad token.
"""

from __future__ import annotations

import torch
from exp3_training_without_mask import LENGTH, SECOND, WORD, build_model, word_sequences

from labkit import Experiment, int_in, print_table, show_heatmaps, train
from labkit.i18n import phrase
from minimind_ref import combined_mask

PAD = 0  # any token id: the attention mask, not the id, is what hides a pad


def add_arguments(parser):
    parser.add_argument("--steps", type=int_in(20, 3000), default=300, help="training steps (default 300)")
    parser.add_argument("--prompts", type=int_in(4, 1024), default=64,
                        help="prompts in the batch, each also decoded alone (default 64)")
    # the longest prompt, 11 tokens, and the new ones must fit the model's 32 positions
    parser.add_argument("--new", type=int_in(1, 2 * LENGTH - (SECOND + WORD - 1)), default=4,
                        help=f"tokens to generate per prompt, at most {2 * LENGTH - (SECOND + WORD - 1)} (default 4)")


def pad_batch(prompts: list[torch.Tensor], side: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack prompts of different lengths into ids [B, L] and attention_mask [B, L] (1 = token)."""
    longest = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), longest), PAD, dtype=torch.long)
    mask = torch.zeros(len(prompts), longest, dtype=torch.long)
    for row, prompt in enumerate(prompts):
        where = slice(longest - len(prompt), longest) if side == "left" else slice(0, len(prompt))
        ids[row, where], mask[row, where] = prompt, 1
    return ids, mask


def greedy_last_column(model, ids: torch.Tensor, mask: torch.Tensor, new: int) -> torch.Tensor:
    """The usual batched greedy loop: read every row's logits at the last column, append the
    tokens as a new column, extend the mask with 1s. Returns the new tokens [B, new]."""
    with torch.no_grad():
        for _ in range(new):
            logits = model(ids, attention_mask=mask).logits[:, -1]  # [B, V]
            ids = torch.cat([ids, logits.argmax(-1, keepdim=True)], dim=1)
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
    return ids[:, -new:]


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments)
    args = exp.args
    model = train_the_word_model(args.seed, args.steps)
    prompts, lengths, word_next = prompts_inside_a_word(args.prompts, args.seed)
    decoded = decode_every_way(model, prompts, args.new)
    results = compare_with_alone(decoded, lengths, word_next, args.prompts, args.new)
    claim_padding(exp, results)
    draw_masks(exp, prompts)
    return exp.finish()


def train_the_word_model(seed: int, steps: int):
    """A small model trained to continue the words of word_sequences."""
    model = build_model(seed)

    def batch(step, generator):
        ids = word_sequences(32, generator)
        return ids[:, :-1], ids[:, 1:]

    train(model, batch, steps=steps, lr=1e-2, seed=seed)
    return model


def prompts_inside_a_word(count: int, seed: int):
    """Prompts of different lengths, each ending inside a word, and the token that continues it."""
    sequences = word_sequences(count, torch.Generator().manual_seed(20_000 + seed))
    lengths = [SECOND + row % WORD for row in range(count)]  # 8, 9, 10, 11, 8, ...: inside the word
    prompts = [sequences[row, :length] for row, length in enumerate(lengths)]
    word_next = torch.stack([sequences[row, length] for row, length in enumerate(lengths)])  # [B]
    return prompts, lengths, word_next


def decode_every_way(model, prompts: list, new: int) -> dict:
    """Greedy decoding of each prompt alone, and of the batch padded on the left and on the right."""
    alone = torch.cat([model.generate(p[None], max_new_tokens=new)[:, -new:] for p in prompts])
    left_ids, left_mask = pad_batch(prompts, "left")
    left = model.generate(left_ids, max_new_tokens=new, attention_mask=left_mask)[:, -new:]
    right_ids, right_mask = pad_batch(prompts, "right")
    right = greedy_last_column(model, right_ids, right_mask, new)
    # For comparison: left padding through the same plain loop, with no position ids.
    left_plain = greedy_last_column(model, left_ids, left_mask, new)

    return {phrase("each prompt alone"): alone, phrase("left-padded batch, generate()"): left,
            phrase("left-padded batch, plain loop"): left_plain, phrase("right-padded batch, plain loop"): right}


def compare_with_alone(decoded: dict, lengths: list[int], word_next, count: int, new: int) -> dict:
    """For padded and unpadded rows: the share decoded as alone, and the share continuing the word."""
    alone = decoded["each prompt alone"]
    padded = torch.tensor([length < max(lengths) for length in lengths])  # rows that got pads
    rows = []
    results = {}
    for name, tokens in decoded.items():
        same = (tokens == alone).all(dim=1)  # [B]: every new token as when decoded alone
        first_right = tokens[:, 0] == word_next  # [B]: the first new token continues the word
        results[name] = dict(same_padded=same[padded].float().mean().item(),
                             same_unpadded=same[~padded].float().mean().item(),
                             first_padded=first_right[padded].float().mean().item())
        r = results[name]
        rows.append([name, r["first_padded"], r["same_padded"], r["same_unpadded"]])
    print(f"{count} prompts of {min(lengths)} to {max(lengths)} tokens, {new} new tokens each, greedy.")
    print()
    print_table(["decoding", "padded rows: 1st token continues the word",
                 "padded rows: all tokens as alone", "unpadded rows: as alone"],
                rows, ["", ".3f", ".3f", ".3f"])
    print()
    print("'Plain loop': every step feeds the whole batch with its mask and reads the last column; no "
          "position ids, so a left-padded row's positions start at its pads.")
    print()
    return results


def claim_padding(exp, results: dict) -> None:
    alone, left, left_plain, right = (results[n] for n in results)
    exp.claim(alone["first_padded"] > 0.9,
              f"decoded alone, the trained model continues the word ({alone['first_padded']:.0%} of the padded rows)")
    exp.claim(left["same_padded"] == 1.0 and left["same_unpadded"] == 1.0,
              "a left-padded batch with its attention mask generates exactly the tokens each prompt generates alone")
    exp.claim(left_plain["same_padded"] == 1.0,
              "so does left padding without position ids: RoPE sees only position differences, which the pads "
              "shift alike for a row's every token")
    exp.claim(right["same_unpadded"] == 1.0 and right["same_padded"] < 0.5 and right["first_padded"] < 0.5,
              f"with right padding the longest prompts (no pads) are unaffected, but only "
              f"{right['same_padded']:.0%} of the padded rows decode as alone, and {right['first_padded']:.0%} "
              f"continue the word: their next token is read at a pad and written after the pads")



def draw_masks(exp, prompts: list) -> None:
    two = [prompts[0][:SECOND - 2], prompts[0][:SECOND]]  # a short and a long prompt
    maps = []
    for side in ("left", "right"):
        _, mask = pad_batch(two, side)
        maps.append(combined_mask(mask, SECOND, SECOND)[0, 0].float())  # the short row's mask
    fig = show_heatmaps(torch.stack(maps), titles=["left padding: pads first", "right padding: pads last"],
                        suptitle=f"causal + padding mask of a {SECOND - 2}-token prompt padded to {SECOND} "
                                 f"(1 = may attend)", annotate=True, fmt=".0f", colorbar=False)
    exp.save(fig, "masks")


if __name__ == "__main__":
    raise SystemExit(main())
