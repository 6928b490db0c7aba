#!/usr/bin/env python3
"""PyTorch's SegNet-Basic training step, the peer of `benches/step.rs`: the same layers (4 encoder
stages of a 7x7 convolution, batch norm and ReLU, each pooled 2x2 with ceil mode keeping indices;
4 decoder stages unpooling with those indices, then the same convolution block; a 1x1 classifier),
the same loss (cross entropy over 11 classes), Adam, the same batch and input size. Prints the
median time of a step (forward, loss, backward, update, then a device sync) after 2 warm-up steps.

    python examples/segnet/benches/segnet_basic_torch.py [--device cpu|cuda] [--width 64]
        [--size 360x480] [--batch 4] [--runs 10] [--threads N]

On a GPU machine run it beside `cargo bench -p segnet --features wgpu --bench step -- --device wgpu`
with the same arguments, and compare the medians as a ratio.
"""

import argparse
import statistics
import time

import torch
from torch import nn


class Block(nn.Sequential):
    def __init__(self, c_in, c_out, kernel):
        super().__init__(nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2),
                         nn.BatchNorm2d(c_out), nn.ReLU())


class SegNetBasic(nn.Module):
    def __init__(self, width, classes, kernel=7, stages=4):
        super().__init__()
        self.encoders = nn.ModuleList(Block(3 if i == 0 else width, width, kernel)
                                      for i in range(stages))
        self.decoders = nn.ModuleList(Block(width, width, kernel) for _ in range(stages))
        self.pool = nn.MaxPool2d(2, 2, ceil_mode=True, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, 2)
        self.classifier = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        trail = []
        for encoder in self.encoders:
            x = encoder(x)
            size = [int(s) for s in x.shape[2:]]  # ints: what ONNX export needs too
            x, indices = self.pool(x)
            trail.append((indices, size))
        for decoder, (indices, size) in zip(self.decoders, reversed(trail)):
            x = decoder(self.unpool(x, indices, output_size=size))
        return self.classifier(x)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--size", default="360x480")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    height, width = map(int, args.size.split("x"))
    device = torch.device(args.device)
    torch.manual_seed(0)
    net = SegNetBasic(args.width, 11).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    images = torch.randn(args.batch, 3, height, width, device=device)
    labels = torch.randint(0, 11, (args.batch, height, width), device=device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def step():
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(net(images), labels)
        loss.backward()
        optimizer.step()
        sync()
        return time.perf_counter() - start

    for _ in range(2):
        step()
    times = [step() for _ in range(args.runs)]
    median = statistics.median(times)
    print(f"pytorch {torch.__version__} on {device} ({torch.get_num_threads()} threads): "
          f"SegNet-Basic width {args.width}, {height}x{width}, batch {args.batch}: "
          f"median step {median * 1e3:.1f} ms over {args.runs} runs "
          f"(min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f})")


if __name__ == "__main__":
    main()
