"""Quality gate for a line model's quantized variants (issue 20): evaluate each next to the f32 weights,
record the verdicts in <model>/variants.json, which `quill line --weights` and `quill serve --weights`
read (a variant is used only where it passed, for exactly the model.safetensors it was measured on).

    python tools/gate_variants.py --quill build/release/quill --model models/quill-line \
        --classifier /tmp/font_classifier.pt --texts 8 --out docs/eval/variants

Each variant is the f32 weights quantized at load by Quill (`quill quantize`'s default policy: block
linears to the type, other matrices bf16) and evaluated by tools/eval_cer.py on the same texts,
references and seeds as the f32 weights. A variant passes when it keeps the f32 model's quality:

* seen-font CER of the generated lines <= 1.1 x the f32 weights' (+ 0.01 for the noise of small sets),
* seen-font ink IoU with the hand >= the f32 weights' - 0.02,
* with a classifier, seen-font font accuracy >= the f32 weights' - 0.05.

It compares the variant with its own f32 model, not with issue 20's absolute gate: a variant cannot be
better than the model it was made from, and whether that model is good enough is the model card's verdict.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

TYPES = ["q8_0", "f8_e4m3", "tq2_0_g128"]


def fnv1a64(path: str) -> str:
    """The hash src/api/line_variants.cpp checks (FNV-1a 64 over the file's bytes), as 16 hex digits."""
    h = 14695981039346656037
    with open(path, "rb") as f:
        data = f.read()
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def evaluate(a, weights: str) -> dict:
    path = os.path.join(a.out, f"{weights}.json")
    cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "eval_cer.py"), "--quill", a.quill,
           "--model", a.model, "--texts", str(a.texts), "--out", os.path.join(a.work, weights), "--json", path,
           "--weights", weights]
    if a.classifier:
        cmd += ["--classifier", a.classifier]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    print(f"evaluating {weights} ...", flush=True)
    subprocess.run(cmd, capture_output=True, text=True)  # exits 1 when issue 20's absolute gate fails
    if not os.path.exists(path):
        raise SystemExit(f"eval_cer.py wrote no {path} for {weights}")
    with open(path) as f:
        return json.load(f)["summary"]["seen"]


def verdict(base: dict, v: dict) -> tuple[bool, list[str]]:
    why = []
    if v["cer_generated"] > 1.1 * base["cer_generated"] + 0.01:
        why.append(f"seen CER {v['cer_generated']:.3f} > 1.1 x f32's {base['cer_generated']:.3f} + 0.01")
    if v["ink_iou_with_ground_truth"] < base["ink_iou_with_ground_truth"] - 0.02:
        why.append(f"ink IoU with the hand {v['ink_iou_with_ground_truth']:.3f} < f32's "
                   f"{base['ink_iou_with_ground_truth']:.3f} - 0.02")
    if "font_accuracy_generated" in base and v["font_accuracy_generated"] < base["font_accuracy_generated"] - 0.05:
        why.append(f"font accuracy {v['font_accuracy_generated']:.3f} < f32's {base['font_accuracy_generated']:.3f} - 0.05")
    return not why, why


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quill", default="build/release/quill")
    ap.add_argument("--model", default="models/quill-line")
    ap.add_argument("--classifier", help="tools/font_classifier.py's file (adds the font-accuracy criterion)")
    ap.add_argument("--texts", type=int, default=8, help="texts per font")
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", default="/tmp/quill-variants", help="folder for each evaluation's JSON")
    ap.add_argument("--work", default="/tmp/quill-variants-work", help="folder for the evaluations' images")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    base = evaluate(a, "f32")
    record = {"model_fnv1a64": fnv1a64(os.path.join(a.model, "model.safetensors")),
              "gate": "seen-font CER <= 1.1 x f32 + 0.01, ink IoU with the hand >= f32 - 0.02, font accuracy >= f32 - 0.05 "
                      "(tools/gate_variants.py)",
              "texts_per_font": a.texts, "f32": base, "variants": {}}
    for t in a.types.split(","):
        seen = evaluate(a, t)
        ok, why = verdict(base, seen)
        record["variants"][t] = {"passed": ok, "why": "; ".join(why) if why else "keeps the f32 weights' quality",
                                 "seen": seen}
        print(f"{t:12s} {'PASSED' if ok else 'FAILED'}: {record['variants'][t]['why']}", flush=True)
    with open(os.path.join(a.model, "variants.json"), "w") as f:
        f.write(json.dumps(record, indent=1) + "\n")
    print(f"wrote {os.path.join(a.model, 'variants.json')}")


if __name__ == "__main__":
    main()
