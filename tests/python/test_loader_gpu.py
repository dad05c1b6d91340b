"""GPU tests of `import gpubase` (label gpu): batches on cuda:N from the three decode paths, in
bf16/fp16/fp32 and NCHW/NHWC, checked against the CPU path (device="cpu"):

    PYTHONPATH=build/python GPUBASE_BIN=build/apps/gpubase/gpubase python3 -m unittest -v test_loader_gpu
"""

import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import unittest

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

import gpubase

IMAGES = 96
SIZE = 64
TMP = None
DATA = None
BROKEN = None


def setUpModule():
    global TMP, DATA, BROKEN
    if torch is None or not torch.cuda.is_available():
        raise unittest.SkipTest("no CUDA device visible to torch")
    binary = os.environ.get("GPUBASE_BIN")
    if not binary or not os.path.exists(binary):
        raise unittest.SkipTest("GPUBASE_BIN (the gpubase binary, for `dataset synth`) not set")
    TMP = tempfile.mkdtemp(prefix="gpubase-pytest-gpu-")
    DATA = os.path.join(TMP, "set")
    subprocess.run([binary, "dataset", "synth", "--out", DATA, "--images", str(IMAGES),
                    "--classes", str(IMAGES), "--scale", "0.5", "--seed", "5"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    BROKEN = os.path.join(TMP, "broken")
    shutil.copytree(DATA, BROKEN)
    first = sorted(d for d in os.listdir(BROKEN) if os.path.isdir(os.path.join(BROKEN, d)))[0]
    with open(os.path.join(BROKEN, first, "zz_broken.jpg"), "wb") as f:
        f.write(b"\xff\xd8\xff\xe0 this is not a JPEG" * 20)


def tearDownModule():
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


def loader(path=None, **kw):
    args = dict(batch_size=16, size=SIZE, workers=3, device=0, seed=9, prefetch=3)
    args.update(kw)
    return gpubase.Loader(path or DATA, **args)


def batches(l):
    return [(x.float().cpu(), y.cpu()) for x, y in l]


def pixels(x):
    """Normalized ImageNet values back to 0..255 levels."""
    mean = torch.tensor(gpubase.IMAGENET_MEAN).view(1, 3, 1, 1) * 255
    std = torch.tensor(gpubase.IMAGENET_STD).view(1, 3, 1, 1) * 255
    return x.float() * std + mean


def psnr(a, b):
    mse = torch.mean((pixels(a) - pixels(b)) ** 2).item()
    return float("inf") if mse == 0 else 10 * math.log10(255 ** 2 / mse)


class Shapes(unittest.TestCase):
    def test_every_mode_dtype_and_layout(self):
        for decode in ("cpu", "gpu", "both"):
            for dtype in (torch.bfloat16, torch.float16, torch.float32):
                for layout in ("NCHW", "NHWC"):
                    with self.subTest(decode=decode, dtype=dtype, layout=layout):
                        kw = dict(gpu_share=0.5) if decode == "both" else {}
                        x, y = next(iter(loader(decode=decode, dtype=dtype, layout=layout, **kw)))
                        self.assertEqual(x.device, torch.device("cuda", 0))
                        self.assertEqual(x.dtype, dtype)
                        self.assertEqual(tuple(x.shape), (16, 3, SIZE, SIZE))
                        fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
                        self.assertTrue(x.is_contiguous(memory_format=fmt))
                        self.assertEqual(y.dtype, torch.int64)
                        self.assertEqual(y.device, x.device)
                        self.assertTrue(torch.isfinite(x.float()).all())


class Values(unittest.TestCase):
    def test_cpu_decode_on_the_gpu_equals_cpu_tensors(self):
        gpu = batches(loader(decode="cpu", dtype=torch.float32))
        cpu = batches(loader(device="cpu", dtype=torch.float32))
        for (xg, yg), (xc, yc) in zip(gpu, cpu):
            self.assertTrue(torch.equal(yg, yc))
            torch.testing.assert_close(xg, xc, rtol=0, atol=1e-6)

    def test_nvjpeg_and_the_split_agree_with_the_cpu_path(self):
        cpu = batches(loader(device="cpu", dtype=torch.float32))
        for kw in (dict(decode="gpu"), dict(decode="both", gpu_share=0.5)):
            with self.subTest(**kw):
                got = batches(loader(dtype=torch.float32, **kw))
                for (xg, yg), (xc, yc) in zip(got, cpu):
                    self.assertTrue(torch.equal(yg, yc))
                    self.assertGreater(psnr(xg, xc), 30)

    def test_the_split_measures_its_share_when_none_is_given(self):
        for kw in (dict(workers=2), dict(workers=None)):
            with self.subTest(**kw):
                l = loader(decode="both", dtype=torch.float32, **kw)
                got = list(l)
                self.assertEqual(len(got), len(l))
                self.assertEqual(got[0][0].device.type, "cuda")
                self.assertEqual(got[0][0].device.index, 0)

    def test_gpu_decode_is_the_same_for_any_worker_count(self):
        one = batches(loader(decode="gpu", workers=1))
        three = batches(loader(decode="gpu", workers=3))
        for (x1, y1), (x3, y3) in zip(one, three):
            self.assertTrue(torch.equal(y1, y3))
            self.assertTrue(torch.equal(x1, x3))

    def test_epochs_on_the_gpu_follow_set_epoch(self):
        l = loader(decode="gpu")
        e0 = batches(l)
        e1 = batches(l)
        self.assertFalse(torch.equal(e0[0][1], e1[0][1]))
        l.set_epoch(0)
        again = batches(l)
        self.assertTrue(torch.equal(e0[2][0], again[2][0]))

    def test_batches_follow_the_consumers_stream(self):
        ref = batches(loader(decode="cpu"))
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            got = []
            for x, y in loader(decode="cpu"):
                got.append(((x * 1).float().cpu(), y.cpu()))
        for (a, _), (b, _) in zip(ref, got):
            self.assertTrue(torch.equal(a, b))

    def test_a_tensor_outlives_its_loader(self):
        l = loader(decode="gpu")
        x, _ = next(iter(l))
        before = x.clone()
        l.close()
        del l
        batches(loader(decode="gpu"))
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(x, before))


class BadSamples(unittest.TestCase):
    def test_strict_on_the_gpu_path_names_the_file(self):
        for decode in ("cpu", "gpu"):
            with self.subTest(decode=decode):
                with self.assertRaises(gpubase.UsageError) as caught:
                    batches(loader(BROKEN, decode=decode, shuffle=False, strict=True))
                self.assertIn("zz_broken.jpg", str(caught.exception))

    def test_substituted_and_counted(self):
        l = loader(BROKEN, decode="gpu", shuffle=False)
        batches(l)
        self.assertEqual(l.stats()["bad_samples"], 1)


class Figures(unittest.TestCase):
    def test_gpu_stats(self):
        l = loader(decode="gpu")
        batches(l)
        s = l.stats()
        self.assertEqual(s["images"], len(l) * 16)
        self.assertGreater(s["gpu_decoded"], 0)
        self.assertGreater(s["gpu_batches_timed"], 0)
        self.assertGreater(s["gpu_decode_ms_per_batch"], 0)
        self.assertTrue(0 <= s["data_wait_share"] <= 1)


class Interrupt(unittest.TestCase):
    def test_ctrl_c_with_gpu_batches_stops_the_process(self):
        code = textwrap.dedent("""
            import sys, torch, gpubase
            loader = gpubase.Loader(sys.argv[1], batch_size=16, size=64, workers=3, device=0,
                                    decode="both", gpu_share=0.5)
            started = False
            while True:
                for x, y in loader:
                    x.float().sum()
                    if not started:
                        print("started", flush=True)
                        started = True
        """)
        p = subprocess.Popen([sys.executable, "-c", code, DATA], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), "started")
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("the process did not end within 30 s of Ctrl-C")
        self.assertIn("KeyboardInterrupt", err)


if __name__ == "__main__":
    unittest.main()
