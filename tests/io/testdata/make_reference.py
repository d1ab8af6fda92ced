"""Writes the interop fixtures read by tests/io: reference.safetensors with the official
`safetensors` package (PyTorch tensors) and reference.gguf with the official `gguf` package
(llama.cpp's writer). Values are exactly representable so the C++ tests can check them.

Run: PYTHONPATH=<dir with the gguf package> python make_reference.py   (needs torch, numpy, safetensors, gguf)
"""
import os

import numpy as np
import torch
from safetensors.torch import save_file

here = os.path.dirname(os.path.abspath(__file__))

save_file(
    {
        "f32": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5 - 1.0,
        "bf16": torch.tensor([1.0, -2.0, 0.5, 3.75], dtype=torch.bfloat16),
        "f16": torch.tensor([[1.5, -0.25], [1024.0, 2.0 ** -14]], dtype=torch.float16),
        "i64": torch.tensor([-1, 0, 1 << 40], dtype=torch.int64),
        "u8": torch.arange(5, dtype=torch.uint8),
        "bool": torch.tensor([True, False]),
        "f8": torch.tensor([0.5, -448.0, 2.0]).to(torch.float8_e4m3fn),
        "empty": torch.zeros(0, 4),
    },
    os.path.join(here, "reference.safetensors"),
    metadata={"format": "pt", "note": "quill reference"},
)

import gguf  # noqa: E402

w = gguf.GGUFWriter(os.path.join(here, "reference.gguf"), arch="quill-test")
w.add_name("ref")
w.add_uint32("test.u32", 4000000000)
w.add_int32("test.i32", -7)
w.add_float32("test.f32", 0.25)
w.add_bool("test.bool", True)
w.add_string("test.str", "héllo")
w.add_array("test.ints", [1, -2, 3])
w.add_array("test.strs", ["a", "bc", ""])
w.add_tensor("w", np.arange(6, dtype=np.float32).reshape(2, 3))
w.add_tensor("h", np.array([1.5, -2.0, 0.125, 65504.0], dtype=np.float16))
row = (np.arange(128, dtype=np.float32) - 32.0).reshape(2, 64)
q = gguf.quants.quantize(row, gguf.GGMLQuantizationType.Q8_0)
w.add_tensor("q", q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
