"""quill.LineStudio against the `quill line` CLI (same seed and settings = the same pixels), and
the package's promises: styles from paths / arrays / PIL, errors as exceptions, cancellation,
the GIL released while the engine runs."""

from __future__ import annotations

import json
import shutil
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import quill
from conftest import MODEL_DIR, read_png, run_cli

STYLE_PNG = MODEL_DIR / "style_reference.png"


@pytest.fixture(scope="module")
def studio() -> quill.LineStudio:
    return quill.LineStudio(MODEL_DIR, device="cpu", threads=2)


def test_packaged_default_model_writes_a_line():
    studio = quill.LineStudio()
    gray = studio.generate("Hej", steps=2)
    assert gray.dtype == np.uint8 and gray.ndim == 2
    assert gray.shape[0] == studio.line_height
    assert gray.shape[1] % 16 == 0
    assert gray.min() < 128, "the line has ink"
    # the package ships the same model as the repository's models/quill-line
    for name in ("config.json", "model.safetensors", "sampler.json"):
        assert (Path(studio.model_dir) / name).read_bytes() == (MODEL_DIR / name).read_bytes()


@pytest.mark.parametrize(
    "text,seed,extra",
    [
        ("Kongl. Maj:ts nådiga förordning", 7, []),
        ("Hej", 0, ["--no-style"]),
        ("Stockholm den 3 maj 1788", 12345678901234, ["--style", str(STYLE_PNG), "--steps", "6", "--cfg", "3.5"]),
        ("Åhus", 3, ["--start-sigma", "1", "--shift", "2"]),
    ],
)
def test_generate_equals_the_cli(studio, cli, tmp_path, text, seed, extra):
    out = tmp_path / "line.png"
    run_cli(cli, "line", "--model", str(MODEL_DIR), "--text", text, "--seed", str(seed), "--device", "cpu",
            *extra, "-o", str(out))
    kwargs = {}
    style = "default"
    it = iter(extra)
    for flag in it:
        if flag == "--no-style":
            style = None
        elif flag == "--style":
            style = Path(next(it))
        elif flag == "--steps":
            kwargs["steps"] = int(next(it))
        elif flag == "--cfg":
            kwargs["cfg"] = float(next(it))
        elif flag == "--start-sigma":
            kwargs["start_sigma"] = float(next(it))
        elif flag == "--shift":
            kwargs["shift"] = float(next(it))
    got = studio.generate(text, style, seed=seed, **kwargs)
    want = read_png(out)
    assert got.shape == want.shape
    assert np.array_equal(got, want), f"max diff {np.abs(got.astype(int) - want).max()}"
    # and the PNG bytes are the CLI's
    assert quill.encode_png(got) == out.read_bytes()


def test_generate_many_equals_the_cli_batch_file(studio, cli, tmp_path):
    texts = ["Hej", "Kongl. Maj:ts nådiga förordning", "i Stockholm", "Hej igen"]
    (tmp_path / "lines.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    run_cli(cli, "line", "--model", str(MODEL_DIR), "--batch-file", str(tmp_path / "lines.txt"), "--seed", "5",
            "--steps", "4", "--max-batch", "2", "--device", "cpu", "-o", str(tmp_path / "l.png"))
    got = studio.generate_many(texts, seed=5, steps=4, max_batch=2)
    for i, g in enumerate(got):
        assert np.array_equal(g, read_png(tmp_path / f"l_{i + 1:04d}.png")), texts[i]


def test_style_as_array_or_pil_equals_the_file(studio):
    from PIL import Image

    from_file = studio.generate("Hej", STYLE_PNG, seed=1, steps=3)
    with Image.open(STYLE_PNG) as im:
        im.load()
        assert np.array_equal(studio.generate("Hej", np.asarray(im), seed=1, steps=3), from_file)
        assert np.array_equal(studio.generate("Hej", im, seed=1, steps=3), from_file)
        # a non-contiguous view is accepted (the binding converts it)
        flipped = np.asarray(im)[:, ::-1]
        assert studio.generate("Hej", flipped, seed=1, steps=3).shape == from_file.shape


def test_row_api_matches_generate(studio):
    emb = studio.embed_style(STYLE_PNG)
    solo = studio.generate("Hej igen", STYLE_PNG, seed=9, steps=3)
    rows = studio.generate_rows([("Hej igen", emb, 9), ("Hej", None, 2)], steps=3)
    assert np.array_equal(rows[0], solo)
    assert rows[1].shape[0] == studio.line_height
    assert studio.bucket_width("Hej") in studio.bucket_widths()


def test_outputs_are_numpy_arrays_that_own_no_copy(studio):
    g = studio.generate("Hej", steps=2)
    assert not g.flags.owndata and g.base is not None  # the engine's buffer, handed over
    assert g.flags.c_contiguous and g.flags.writeable


def test_pil_output(studio):
    im = studio.generate("Hej", steps=2, output="pil")
    assert im.mode == "L" and im.size[1] == studio.line_height


@pytest.mark.parametrize(
    "call,exc,needle",
    [
        (lambda s: s.generate("Hej", steps=0), ValueError, "steps must be in [1, 1000]"),
        (lambda s: s.generate("Hej", cfg=float("nan")), ValueError, "guidance_scale"),
        (lambda s: s.generate("", steps=2), ValueError, "empty"),
        (lambda s: s.generate("x" * 400, steps=2), ValueError, "wide"),
        (lambda s: s.generate("Hej", np.zeros((4, 4, 7), np.uint8)), ValueError, "7 channels"),
        (lambda s: s.generate("Hej", np.zeros((4, 4), np.float32)), ValueError, "uint8"),
        (lambda s: s.generate("Hej", 3.5), ValueError, "style must be"),
        (lambda s: s.generate("Hej", "/no/such/style.png"), FileNotFoundError, "/no/such/style.png"),
        (lambda s: s.generate("Hej", output="jpeg"), ValueError, "output must be"),
        (lambda s: s.generate_many(["a\nb"], steps=2), ValueError, "line break"),
    ],
)
def test_bad_input_is_a_clear_exception(studio, call, exc, needle):
    with pytest.raises(exc) as e:
        call(studio)
    assert isinstance(e.value, (quill.QuillError, ValueError))
    assert needle.lower() in str(e.value).lower(), str(e.value)


def test_bad_model_folders_are_named(tmp_path):
    with pytest.raises(quill.NotFoundError, match="nope"):
        quill.LineStudio(tmp_path / "nope")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("{not json")
    with pytest.raises(quill.QuillError) as e:
        quill.LineStudio(bad)
    assert "config.json" in str(e.value)
    with pytest.raises(ValueError, match="device"):
        quill.LineStudio(MODEL_DIR, device="tpu")


def fnv1a64(path: Path) -> str:
    h = 0xCBF29CE484222325
    for b in path.read_bytes():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def test_quantized_weights_need_a_passed_verdict(tmp_path):
    model = tmp_path / "m"
    shutil.copytree(MODEL_DIR, model)
    (model / "variants.json").unlink(missing_ok=True)
    with pytest.raises(quill.NotFoundError, match="variants.json"):
        quill.LineStudio(model, device="cpu", weights="q8_0")
    with pytest.raises(ValueError, match="unknown weight type 'q4_k'"):
        quill.LineStudio(model, device="cpu", weights="q4_k")
    verdict = {"model_fnv1a64": fnv1a64(model / "model.safetensors"),
               "variants": {"q8_0": {"passed": True}, "tq2_0_g128": {"passed": False, "why": "illegible"}}}
    (model / "variants.json").write_text(json.dumps(verdict))
    with pytest.raises(ValueError, match="failed its quality gate \\(illegible\\)"):
        quill.LineStudio(model, device="cpu", weights="tq2_0_g128")
    q8 = quill.LineStudio(model, device="cpu", threads=1, weights="q8_0").generate("Hej", seed=1)
    f32 = quill.LineStudio(model, device="cpu", threads=1).generate("Hej", seed=1)
    assert q8.shape == f32.shape and not np.array_equal(q8, f32)


def test_cancel_token_from_another_thread(studio):
    token = quill.CancelToken()
    steps_seen = []

    def progress(done, total, step, steps):
        steps_seen.append(step)
        if step == 2:
            threading.Timer(0.0, token.cancel).start()
            time.sleep(0.05)

    with pytest.raises(quill.Cancelled):
        studio.generate("Kongl. Maj:ts nådiga förordning", steps=50, progress=progress, cancel=token)
    assert max(steps_seen) < 50
    token.reset()
    assert studio.generate("Hej", steps=2, cancel=token).ndim == 2  # usable again


def test_progress_callback_can_stop_and_its_errors_propagate(studio):
    with pytest.raises(quill.Cancelled):
        studio.generate("Hej", steps=10, progress=lambda *a: False)

    def boom(*a):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        studio.generate("Hej", steps=10, progress=boom)


def test_ctrl_c_interrupts_a_generation(studio):
    import _thread

    def progress(done, total, step, steps):
        if step == 1:
            _thread.interrupt_main()

    with pytest.raises(KeyboardInterrupt):
        studio.generate("Hej", steps=30, progress=progress)


def test_the_gil_is_released_while_generating(studio):
    ticks = 0
    stop = threading.Event()

    def count():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    t0 = time.perf_counter()
    studio.generate("Kongl. Maj:ts nådiga förordning", steps=20)
    elapsed = time.perf_counter() - t0
    stop.set()
    t.join()
    # the counter thread ran through the call: at least a quarter of the ticks it gets when idle
    assert ticks > 0.25 * elapsed / 0.0011, (ticks, elapsed)


def test_threads_can_share_a_studio(studio):
    results = {}

    def work(seed):
        results[seed] = studio.generate("Hej", seed=seed, steps=3)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in range(3):
        assert np.array_equal(results[s], studio.generate("Hej", seed=s, steps=3))


def test_missing_glyphs_warn(studio):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        studio.generate("Hej \u4e2d", steps=2)  # the glyph font (DejaVu Sans) has no CJK
    assert any(issubclass(x.category, quill.MissingGlyphsWarning) and "U+4E2D" in str(x.message) for x in w)


def test_generate_rows_with_missing_returns_the_code_points(studio):
    with warnings.catch_warnings():
        warnings.simplefilter("error", quill.MissingGlyphsWarning)  # returned, not warned about
        rows = studio.generate_rows([("Hej \u4e2d", None, 1), ("Hej \U0001F600", None, 2)], steps=2,
                                    with_missing=True)
    (gray, missing), (_, none_missing) = rows
    assert missing == [0x4E2D] and none_missing == []  # DejaVu Sans has emoji, no CJK
    with pytest.warns(quill.MissingGlyphsWarning, match="U\\+4E2D"):  # the default still warns
        assert np.array_equal(gray, studio.generate_rows([("Hej \u4e2d", None, 1)], steps=2)[0])


def test_type_stubs_ship_with_the_package():
    pkg = Path(quill.__file__).parent
    stub = (pkg / "_quill.pyi").read_text()
    assert "class LineStudio" in stub and "def generate_rows" in stub
    assert (pkg / "py.typed").exists()
