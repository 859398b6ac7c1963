"""RMSNorm: scale each vector to unit root-mean-square, then by a learned gain.

Used before attention and before the feed-forward in every block (pre-norm), on the final hidden
state, and, when `qk_norm=True` (MiniMind3 / Qwen3), on each head's query and key. Unlike
LayerNorm it neither subtracts the mean nor adds a bias: one statistic, one learned vector.
"""

import torch
from torch import nn

from ._checks import check_arguments, check_features


class RMSNorm(nn.Module):
    """y = weight * x / sqrt(mean(x^2) + eps), over the last dimension.

    The statistic is computed in float32 whatever the input dtype (a float16 square overflows
    past 256), and the result is cast back before the gain, as MiniMind and LLaMA do.
    """

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        check_arguments("RMSNorm(dim, eps)", dim=dim, eps=eps)
        self.eps, self.dim = float(eps), int(dim)  # dim: the width of x it normalises
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., dim] -> [..., dim]
        if type(x) is not torch.Tensor or not x.dtype.is_floating_point or x.shape[-1:] != (self.dim,):
            check_features("RMSNorm", x, self.dim)
        x32 = x.float()
        normed = x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + self.eps)  # x / rms(x)
        return self.weight * normed.type_as(x)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"
