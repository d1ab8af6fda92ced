"""How much a line model relies on its style input: the v-loss with each line's own style reference,
with another line's (the batch rolled by one, mostly another font) and with none (the zero embedding
CFG uses), at fixed sigmas on fixed batches of a data folder.

    python tools/style_reliance.py --model models/quill-line --data /work/line-runs/data32w

A model that ignores the style gives three equal numbers; "shuffled" above "own" means the model
writes the reference's hand (or at least something that depends on it). The data must have the
style input layout the model was trained on (squash or wrap, tools/line_data.py --style-layout).
"""
from __future__ import annotations

import argparse
import json

import numpy as np
import torch

from train_line_model import LineData, Trainer, load_init


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="an exported model folder or a checkpoint.pt")
    ap.add_argument("--data", required=True, help="a tools/line_data.py folder")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--sigmas", default="0.5,0.8,1.0")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    init = load_init(a.model)
    net = Trainer(init["preset"])
    net.load_state_dict(init["ema"])
    net.eval()
    data = LineData(a.data)
    layout = init["preset"]["style"].get("layout", "squash")
    if (layout, init["preset"]["style"]["image_size"]) != (data.style_layout, data.style_size):
        raise SystemExit(f"{a.data}: style input {data.style_layout} {data.style_size}px, the model's "
                         f"{layout} {init['preset']['style']['image_size']}px")
    rng, gen = np.random.default_rng(7), torch.Generator().manual_seed(7)
    batches = [data.batch(rng, a.batch) for _ in range(a.batches)]
    out = {}
    for sig in (float(s) for s in a.sigmas.split(",")):
        res = {"own": 0.0, "shuffled": 0.0, "none": 0.0}
        for x0, glyph, style in batches:
            b = x0.shape[0]
            eps = torch.randn(x0.shape, generator=gen)
            xt = (1 - sig) * x0 + sig * eps
            with torch.no_grad():
                emb = net.style_encoder(pixel_values=style).pooler_output
                for k, e in (("own", emb), ("shuffled", emb.roll(1, 0)), ("none", torch.zeros_like(emb))):
                    v = net.model(xt, glyph, e, torch.full((b,), sig * 1000.0))
                    res[k] += torch.nn.functional.mse_loss(v, eps - x0).item() / len(batches)
        out[f"{sig:.1f}"] = {k: round(v, 5) for k, v in res.items()}
        print(f"sigma {sig:.1f}: own {res['own']:.4f}  shuffled {res['shuffled']:.4f}  none {res['none']:.4f}  "
              f"(shuffled / own {res['shuffled'] / res['own']:.3f})", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "data": a.data, "loss": out}, f, indent=1)


if __name__ == "__main__":
    main()
