from . import parallel  # noqa: F401


class Module:
    def __call__(self, *a, **kw):
        return self.forward(*a, **kw)

    def parameters(self):
        return []

    def cuda(self):
        return self


class ModuleList(list):
    def __init__(self, it=()):
        super().__init__(it)


class Linear(Module):
    def __init__(self, a, b):
        pass

    def forward(self, x):
        return x
