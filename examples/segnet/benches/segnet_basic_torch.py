#!/usr/bin/env python3
"""PyTorch's SegNet-Basic training step, the peer of `benches/step.rs`: the same layers (4 encoder
stages of a 7x7 convolution, batch norm and ReLU, each pooled 2x2 with ceil mode keeping indices;
4 decoder stages unpooling with those indices, then the same convolution block; a 1x1 classifier),
the same loss (cross entropy over 11 classes), Adam, the same batch and input size. Prints the
median time of a step (forward, loss, backward, update, then a device sync) after 2 warm-up steps.

    python examples/segnet/benches/segnet_basic_torch.py [--device cpu|cuda] [--width 64]
        [--size 360x480] [--batch 4] [--runs 10] [--threads N] [--float f32|f16|bf16]
        [--parts] [--part-runs 10]

On a GPU machine run it beside `cargo bench -p segnet --features wgpu --bench step -- --device wgpu`
with the same arguments, and compare the medians as a ratio. `--parts` then times the step's parts
one by one at the network's shapes, as the step bench's `--parts` does (`benches/step/parts.rs`),
printing the same `part NAME MS ms` lines: every convolution's forward, its input gradient (not
the first layer's), its weight and bias gradient (`aten.convolution_backward`, which autograd
calls), batch norm with ReLU forward and backward from a `sum()`, the pools and unpools forward
and backward from a `sum()`, the loss forward and backward, and Adam's update; each part's layers
queued, one device sync, median of the runs after one untimed run. `--float` runs the whole step
in that dtype (weights, activations, gradients), as the step bench's `--float` does.
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

FLOATS = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
CLASSES = 11


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


def median_ms(sync, runs, part):
    """The median time (ms) of `runs` runs of `part` after one untimed run; what it returns lives
    until the device has synced."""
    times = []
    for _ in range(runs + 1):
        sync()
        start = time.perf_counter()
        kept = part()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
        del kept
    return statistics.median(times[1:])


def parts(net, images, labels, loss_fn, optimizer, sync, runs):
    """Every part of one step, timed alone at the network's shapes: (name, ms) in the step bench's
    order."""
    device, dtype = images.device, images.dtype
    convs, pools = [], []
    x = images
    with torch.no_grad():
        # The shapes, read off one forward (the pools' inputs, every convolution's input).
        for encoder in net.encoders:
            convs.append((encoder[0], x.shape))
            x = encoder(x)
            pools.append(x.shape)
            x, _ = net.pool(x)
        for decoder, shape in zip(net.decoders, reversed(pools)):
            convs.append((decoder[0], shape))
        convs.append((net.classifier, pools[0][:1] + (net.classifier.in_channels,) + pools[0][2:]))
    rand = lambda shape: torch.randn(*shape, device=device, dtype=dtype)
    layers = []
    for conv, shape in convs:
        out = (shape[0], conv.out_channels) + tuple(shape[2:])
        layers.append((conv, rand(shape), rand(out)))
    backward = torch.ops.aten.convolution_backward.default

    def conv_grad(conv, x, dy, mask):
        return backward(dy, x, conv.weight, [conv.out_channels], conv.stride, conv.padding, conv.dilation,
                        False, [0, 0], 1, mask)

    timed = []
    with torch.no_grad():
        timed.append(("conv-forward", median_ms(sync, runs, lambda: [conv(x) for conv, x, _ in layers])))
        timed.append(("conv-input-grad", median_ms(sync, runs, lambda: [
            conv_grad(conv, x, dy, [True, False, False]) for conv, x, dy in layers[1:]])))
        timed.append(("conv-weight-grad", median_ms(sync, runs, lambda: [
            conv_grad(conv, x, dy, [False, True, True]) for conv, x, dy in layers])))
    blocks = [(nn.Sequential(nn.BatchNorm2d(conv.out_channels), nn.ReLU()).to(device, dtype), dy)
              for conv, _, dy in layers[:-1]]

    def norm_part():
        kept = []
        for block, x in blocks:
            x = x.detach().requires_grad_()
            block(x).sum().backward()
            kept.append(x.grad)
        return kept

    timed.append(("batch-norm-relu", median_ms(sync, runs, norm_part)))
    pool_inputs = [rand(shape) for shape in pools]

    def pool_part():
        kept = []
        for x in pool_inputs:
            x = x.detach().requires_grad_()
            values, indices = net.pool(x)
            net.unpool(values, indices, output_size=x.shape[2:]).sum().backward()
            kept.append(x.grad)
        return kept

    timed.append(("pools-unpools", median_ms(sync, runs, pool_part)))
    logits = rand((images.shape[0], CLASSES) + tuple(images.shape[2:]))

    def loss_part():
        x = logits.detach().requires_grad_()
        loss_fn(x, labels).backward()
        return x.grad

    timed.append(("loss", median_ms(sync, runs, loss_part)))
    optimizer_times = []
    for _ in range(runs + 1):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(net(images), labels).backward()
        sync()
        start = time.perf_counter()
        optimizer.step()
        sync()
        optimizer_times.append((time.perf_counter() - start) * 1e3)
    timed.append(("optimizer", statistics.median(optimizer_times[1:])))
    return timed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--size", default="360x480")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--float", choices=sorted(FLOATS), default="f32")
    parser.add_argument("--parts", action="store_true", help="also time the step's parts")
    parser.add_argument("--part-runs", type=int, default=10)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    height, width = map(int, args.size.split("x"))
    device = torch.device(args.device)
    torch.manual_seed(0)
    dtype = FLOATS[args.float]
    net = SegNetBasic(args.width, CLASSES).to(device, dtype)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    images = torch.randn(args.batch, 3, height, width, device=device, dtype=dtype)
    labels = torch.randint(0, CLASSES, (args.batch, height, width), device=device)

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
          f"SegNet-Basic width {args.width}, {height}x{width}, batch {args.batch}, {args.float}: "
          f"median step {median * 1e3:.1f} ms over {args.runs} runs "
          f"(min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f})")
    if args.parts:
        timed = parts(net, images, labels, loss_fn, optimizer, sync, args.part_runs)
        total = sum(ms for _, ms in timed)
        print(f"parts of one step, median of {args.part_runs} runs each, one device sync per run:")
        for name, ms in timed:
            print(f"part {name:<17} {ms:>10.3f} ms ({100 * ms / total:>4.1f}% of the parts)")
        print(f"part {'sum':<17} {total:>10.3f} ms")
        print(f"part {'rest':<17} {median * 1e3 - total:>10.3f} ms (the whole step less the parts' sum)")


if __name__ == "__main__":
    main()
