"""A stand-in for torch (see ../README): logs what the callers ask."""
import os

from . import cuda, distributed, nn, optim, profiler  # noqa: F401


def log(line):
    path = os.environ.get("TORCH_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


class Tensor:
    def __init__(self, grad_fn=True):
        self.grad_fn = grad_fn

    def square(self):
        return Tensor()

    def mean(self):
        return Tensor()

    def backward(self):
        nn.parallel.backward()


def randn(*shape, device=None):
    return Tensor()


def relu(x):
    return x
