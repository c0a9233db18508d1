class _ExperimentalConfig:
    def __init__(self, **kw):
        self.kw = kw

    def __repr__(self):
        return "_ExperimentalConfig(%s)" % ", ".join(f"{k}={v}" for k, v in sorted(self.kw.items()))
