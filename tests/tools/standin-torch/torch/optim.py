class SGD:
    def __init__(self, params, lr=0.01):
        pass

    def step(self):
        import torch
        torch.log("optimizer step")

    def zero_grad(self, set_to_none=True):
        pass
