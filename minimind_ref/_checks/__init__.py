"""The door: every input check of minimind_ref, in one module per kind of input.

    values.py     numbers, ints, bools, tensors: the shared vocabulary of the messages
    config.py     the configs' fields: their types and ranges, one table per config
    attention.py  what the attention functions accept (explicit, fused, FlashAttention)
    model.py      the model's inputs: forward, generate, sampling, state dicts
    cache.py      the KV cache's constructor and what it holds

Each check runs once per public call, at its top, and never inside a per-token path: the model's
`forward` is checked by a forward pre-hook (so `model(...)` checks, and `generate`'s steps, which
call `forward` directly, do not). Every message names the argument, the rule and the fix. A
learner is never sent here: the files that teach the ideas stay free of their checks.
"""
