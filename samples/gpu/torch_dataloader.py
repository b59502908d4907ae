# SPDX-License-Identifier: MIT
"""A small PyTorch training loop fed by a DataLoader with worker processes
(forked) and pinned memory. Prints the losses: they must be identical with and
without the profiler."""
import torch
from torch.utils.data import DataLoader, Dataset


class Synthetic(Dataset):
    def __len__(self):
        return 2048

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(64, generator=g)
        return x, (x.sum() > 0).long()


def main():
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 2)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(Synthetic(), batch_size=128, shuffle=False, num_workers=4, pin_memory=True)
    for epoch in range(3):
        total = 0.0
        for x, y in loader:
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        print(f"epoch {epoch} loss {total:.6f}")
    torch.cuda.synchronize()
    print(f"max_memory_reserved {torch.cuda.max_memory_reserved()}")


if __name__ == "__main__":
    main()
