"""DistributedDataParallel as far as no_sync goes: its forward and
backward say whether the gradients would be reduced. PyTorch reduces
after a backward whose forward ran outside no_sync(), so both are
logged with the state they ran in."""
import contextlib

_state = {"nosync": 0}


def _log(what):
    import torch
    torch.log(f"{what} sync={0 if _state['nosync'] else 1}")


def backward():
    _log("backward")


class DistributedDataParallel:
    def __init__(self, module, **kw):
        self.module = module

    def __call__(self, *a, **kw):
        _log("forward")
        return self.module(*a, **kw)

    def parameters(self):
        return self.module.parameters()

    @contextlib.contextmanager
    def no_sync(self):
        _state["nosync"] += 1
        try:
            yield
        finally:
            _state["nosync"] -= 1
