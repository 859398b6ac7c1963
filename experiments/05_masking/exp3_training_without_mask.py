"""Trained without the causal mask, a model reaches a training loss far below what any honest model
can reach, by copying each next token from the future, and then fails when it decodes, where the
future does not exist yet; the same model trained with the mask learns the real pattern.

Each training sequence is 16 tokens from a vocabulary of 16: a 4-token "word", 4 random tokens, the
word again, 4 random tokens. Only the second copy of the word is predictable: a model that sees
just the past must pay ln 16 nats for each of the other 11 targets, a floor of 11/15 x ln 16 = 2.03
nats per token. Two copies of the same small MiniMind (one layer, MiniMind's RoPE) train with
`labkit.training.train` on the same batches: one with its causal mask, one whose
attention layers are handed an all-True mask by a forward pre-hook, so every position sees every
input token. The script reports the training loss, where the unmasked model's attention goes, and
two held-out accuracies on the second copy of the word: with the whole sequence given (as in
training) and when decoding greedily, one token at a time, from the first 8 tokens.

Why it matters: the causal mask is what makes next-token training honest. Without it the loss looks
superb and means nothing: the input already contains the answer, one position to the right.
"""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from labkit import Experiment, float_in, int_in, print_table, show_heatmaps, train
from labkit.i18n import phrase
from minimind_ref import MiniMindConfig, MiniMindForCausalLM

VOCAB, WORD, GAP = 16, 4, 4
LENGTH = 2 * WORD + 2 * GAP  # word, noise, word, noise
SECOND = WORD + GAP  # where the second copy of the word starts


def add_arguments(parser):
    parser.add_argument("--steps", type=int_in(20, 3000), default=300, help="training steps per model (default 300)")
    parser.add_argument("--batch", type=int_in(1, 512), default=32, help="sequences per step (default 32)")
    parser.add_argument("--lr", type=float_in(0.0, 10.0, low_open=True), default=1e-2,
                        help="peak learning rate (default 1e-2)")
    # measured in one pass: about 60 KiB a sequence
    parser.add_argument("--held-out", type=int_in(1, 10_000), default=300, help="held-out sequences (default 300)")


MAX_SEQUENCES = 2 ** 18  # --steps x --batch, for each of the two models: 27 times the defaults


def check_arguments(args):
    if args.steps * args.batch > MAX_SEQUENCES:
        return (f"--steps x --batch must be at most {MAX_SEQUENCES}, got {args.steps} x {args.batch} = "
                f"{args.steps * args.batch}")
    return None


def word_sequences(count: int, generator: torch.Generator) -> torch.Tensor:
    """[count, 16] random tokens whose positions 8..11 repeat positions 0..3."""
    ids = torch.randint(0, VOCAB, (count, LENGTH), generator=generator)
    ids[:, SECOND:SECOND + WORD] = ids[:, :WORD]
    return ids


def honest_floor() -> float:
    """The lowest mean loss without seeing the future: ln V for every target that is not the
    second copy of the word (the first copy, the noise), 0 for the 4 that are."""
    targets = LENGTH - 1
    return (targets - WORD) / targets * math.log(VOCAB)


def cheating_floor() -> float:
    """The lowest mean loss when every input token is visible: only the last target, which is
    never an input, stays unpredictable (ln V over the 15 targets)."""
    return math.log(VOCAB) / (LENGTH - 1)


def build_model(seed: int) -> MiniMindForCausalLM:
    torch.manual_seed(seed)  # both models start from the same weights
    config = MiniMindConfig(hidden_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4,
                            vocab_size=VOCAB, max_position_embeddings=2 * LENGTH)
    return MiniMindForCausalLM(config)


def see_everything(module, args):
    """Forward pre-hook for an Attention layer: replace its mask with an all-True one, so that
    every query sees every key, the future included. (Written for calls without a KV cache.)"""
    x, position_embeddings, _mask, cache, *rest = args
    if cache is not None:
        raise ValueError("see_everything is written for calls without a KV cache: pass use_cache=False")
    length = x.shape[1]
    return (x, position_embeddings, torch.ones(1, 1, length, length, dtype=torch.bool), cache, *rest)


def remove_causal_mask(model: MiniMindForCausalLM) -> None:
    for layer in model.model.layers:
        layer.self_attn.register_forward_pre_hook(see_everything)


def evaluate(model: MiniMindForCausalLM, held_out: torch.Tensor) -> dict:
    """Accuracy on the second copy of the word, with the whole sequence given and when decoding."""
    word = held_out[:, SECOND:SECOND + WORD]  # [N, 4]: what should come
    with torch.no_grad():
        out = model(held_out[:, :-1], output_attentions=True)
        # position t predicts token t + 1: positions 7..10 predict the word's second copy
        given_all = (out.logits.argmax(-1)[:, SECOND - 1:SECOND + WORD - 1] == word).float().mean().item()
        weights = out.attentions[0]  # [N, H, T, T]
        # per head, the mean weight query t puts on key t + 1; the head that does it most
        on_next = weights.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, 2))  # [H]
        head = int(on_next.argmax())
    # Decoding: the first 8 tokens only; each new token is appended and the whole prefix read again.
    generated = model.generate(held_out[:, :SECOND], max_new_tokens=WORD, use_cache=False)
    decoded = (generated[:, SECOND:] == word).float().mean().item()
    return {"given_all": given_all, "decoded": decoded, "next_weight": on_next[head].item(), "head": head,
            "map": weights[0, head]}


def main(argv=None):
    exp = Experiment.start(__doc__, __file__, argv, add_arguments, check_arguments)
    args = exp.args
    runs = train_with_and_without_the_mask(args.batch, args.held_out, args.steps, args.lr, args.seed)
    print_runs(runs, args.batch, args.held_out, args.steps)
    claim_masking(exp, runs)
    draw_loss_and_attention(exp, runs)
    return exp.finish()


def train_with_and_without_the_mask(batch_size: int, held_out_count: int, steps: int, lr: float, seed: int) -> dict:
    """The same model trained twice, with the causal mask and without it, each evaluated on
    held-out sequences."""
    def batch(step, generator):
        ids = word_sequences(batch_size, generator)
        return ids[:, :-1], ids[:, 1:]  # inputs, next-token targets

    held_out = word_sequences(held_out_count, torch.Generator().manual_seed(10_000 + seed))
    runs = {}
    for name in (phrase("causal mask"), phrase("no mask")):
        model = build_model(seed)
        if name == "no mask":
            remove_causal_mask(model)
        log = train(model, batch, steps=steps, lr=lr, seed=seed)
        runs[name] = {"log": log, **evaluate(model, held_out)}
    return runs


def print_runs(runs: dict, batch_size: int, held_out_count: int, steps: int) -> None:
    chance = 1 / VOCAB
    print(f"Sequences of {LENGTH} tokens (word, noise, word, noise), vocabulary {VOCAB}, {steps} steps of "
          f"{batch_size}.")
    print(f"Lowest possible training loss: {honest_floor():.3f} seeing only the past (11/15 x ln {VOCAB}); "
          f"{cheating_floor():.3f} seeing every input (ln {VOCAB} / 15).")
    print()
    print_table(["model", "train loss (last 20 steps)", "head most on the next token",
                 "word accuracy, whole sequence given", "word accuracy, decoding"],
                [[name, r["log"].final_loss(), f"{r['head']}: {r['next_weight']:.2f}", r["given_all"], r["decoded"]]
                 for name, r in runs.items()],
                ["", ".3f", "", ".3f", ".3f"])
    print()
    print(f"Accuracy on the 4 tokens of the word's second copy, {held_out_count} held-out sequences; chance is "
          f"1/{VOCAB} = {chance:.3f}. 'Head most on the next token': the head whose queries t put the most\n"
          f"weight on key t + 1, and that mean weight.")
    print()



def claim_masking(exp, runs: dict) -> None:
    chance = 1 / VOCAB
    causal, cheat = runs["causal mask"], runs["no mask"]
    exp.claim(cheat["log"].final_loss() < cheating_floor() + 0.1 < honest_floor(),
              f"without the mask the training loss reaches {cheat['log'].final_loss():.3f}, within 0.1 of the "
              f"{cheating_floor():.3f} left by the one target it cannot see and far below the honest floor "
              f"{honest_floor():.3f}")
    exp.claim(causal["log"].final_loss() > 0.95 * honest_floor(),
              f"with the mask the loss stays above the honest floor ({causal['log'].final_loss():.3f} vs "
              f"{honest_floor():.3f}): the noise cannot be predicted from the past")
    exp.claim(cheat["next_weight"] > 0.5,
              f"the unmasked model copies from the future: in head {cheat['head']}, query t puts "
              f"{cheat['next_weight']:.0%} of its weight on key t + 1 on average (the causal model: "
              f"{causal['next_weight']:.0%}, it may not look there)")
    exp.claim(cheat["given_all"] > 0.9 and cheat["decoded"] < 0.3,
              f"given the whole sequence, the unmasked model 'predicts' the word ({cheat['given_all']:.0%}); "
              f"decoding, where the next token is not there to copy, it gets {cheat['decoded']:.0%} "
              f"(chance {chance:.0%})")
    exp.claim(causal["decoded"] > 0.9,
              f"the model trained with the mask decodes the word: {causal['decoded']:.0%} right")



def draw_loss_and_attention(exp, runs: dict) -> None:
    causal, cheat = runs["causal mask"], runs["no mask"]
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, r in runs.items():
        ax.plot(r["log"].losses, label=name, lw=1)
    ax.axhline(honest_floor(), color="black", ls="--", lw=1, label="floor seeing only the past")
    ax.axhline(cheating_floor(), color="gray", ls=":", lw=1, label="floor seeing every input")
    ax.set(xlabel="step", ylabel="training loss (nats per token)", title="Training with and without the causal mask")
    ax.legend()
    exp.save(fig, "loss")
    labels = [str(t) for t in range(LENGTH - 1)]
    fig = show_heatmaps(torch.stack([causal["map"], cheat["map"]]), x_labels=labels,
                        titles=[f"causal mask, head {causal['head']}",
                                f"no mask, head {cheat['head']}: one step ahead"],
                        suptitle="attention of the trained models on a held-out sequence")
    exp.save(fig, "attention")


if __name__ == "__main__":
    raise SystemExit(main())
