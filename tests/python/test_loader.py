"""CPU tests of `import gpubase` (device="cpu"; no GPU needed): order and determinism, sharding,
bad samples, errors, the DLPack tensors' shape, dtype and strides, values against the C++
loader, Ctrl-C. Run by ctest with PYTHONPATH=<build>/python and GPUBASE_BIN=<build>/gpubase:

    PYTHONPATH=build/python GPUBASE_BIN=build/apps/gpubase/gpubase python3 -m unittest -v test_loader
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import gpubase
from gpubase import _gpubase

try:
    import numpy
except ImportError:  # pragma: no cover
    numpy = None
try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

IMAGES = 48  # one class per image: a label names its sample
SIZE = 32
TMP = None
CLEAN = None   # ImageFolder of IMAGES synthetic JPEGs
BROKEN = None  # the same plus one file that is not a JPEG


def setUpModule():
    global TMP, CLEAN, BROKEN
    binary = os.environ.get("GPUBASE_BIN")
    if not binary or not os.path.exists(binary):
        raise unittest.SkipTest("GPUBASE_BIN (the gpubase binary, for `dataset synth`) not set")
    TMP = tempfile.mkdtemp(prefix="gpubase-pytest-")
    CLEAN = os.path.join(TMP, "clean")
    subprocess.run([binary, "dataset", "synth", "--out", CLEAN, "--images", str(IMAGES),
                    "--classes", str(IMAGES), "--scale", "0.2", "--seed", "3", "--threads", "2"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    BROKEN = os.path.join(TMP, "broken")
    shutil.copytree(CLEAN, BROKEN)
    first_class = sorted(d for d in os.listdir(BROKEN) if os.path.isdir(os.path.join(BROKEN, d)))[0]
    with open(os.path.join(BROKEN, first_class, "zz_broken.jpg"), "wb") as f:
        f.write(b"\xff\xd8\xff\xe0 this is not a JPEG" * 20)


def tearDownModule():
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


def as_numpy(t):
    if torch is not None and isinstance(t, torch.Tensor):
        return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return t


def cpu_loader(path=None, **kw):
    args = dict(batch_size=8, size=SIZE, workers=2, device="cpu", dtype="float32", seed=11,
                prefetch=3)
    args.update(kw)
    return gpubase.Loader(path or CLEAN, **args)


def epoch_batches(loader):
    return [(as_numpy(x).copy(), as_numpy(y).copy()) for x, y in loader]


@unittest.skipIf(numpy is None, "numpy is not installed")
class Order(unittest.TestCase):
    def test_a_batch_is_the_same_whatever_the_worker_count(self):
        one = epoch_batches(cpu_loader(workers=1))
        four = epoch_batches(cpu_loader(workers=4))
        self.assertEqual(len(one), len(four))
        for (x1, y1), (x4, y4) in zip(one, four):
            numpy.testing.assert_array_equal(x1, x4)
            numpy.testing.assert_array_equal(y1, y4)

    def test_each_pass_is_the_next_epoch_and_set_epoch_repeats_one(self):
        loader = cpu_loader()
        e0 = epoch_batches(loader)
        self.assertEqual(loader.epoch, 0)
        e1 = epoch_batches(loader)
        self.assertEqual(loader.epoch, 1)
        self.assertFalse(numpy.array_equal(e0[0][1], e1[0][1]), "epoch 1 reuses epoch 0's order")
        loader.set_epoch(0)
        again = epoch_batches(loader)
        for (xa, ya), (xb, yb) in zip(e0, again):
            numpy.testing.assert_array_equal(xa, xb)
            numpy.testing.assert_array_equal(ya, yb)

    def test_an_epoch_broken_off_restarts_cleanly(self):
        loader = cpu_loader()
        full = epoch_batches(loader)
        loader.set_epoch(0)
        for _ in zip(range(2), loader):
            pass
        loader.set_epoch(0)
        numpy.testing.assert_array_equal(epoch_batches(loader)[3][0], full[3][0])

    def test_every_sample_once_per_epoch_without_shuffle_in_order(self):
        labels = numpy.concatenate([y for _, y in epoch_batches(cpu_loader(shuffle=False))])
        numpy.testing.assert_array_equal(labels, numpy.arange(IMAGES))

    def test_shuffled_epoch_is_a_permutation(self):
        labels = numpy.concatenate([y for _, y in epoch_batches(cpu_loader())])
        self.assertEqual(sorted(labels.tolist()), list(range(IMAGES)))
        self.assertNotEqual(labels.tolist(), list(range(IMAGES)))

    def test_len_counts_full_batches_or_the_partial_one(self):
        self.assertEqual(len(cpu_loader(batch_size=10)), IMAGES // 10)
        loader = cpu_loader(batch_size=10, drop_last=False)
        self.assertEqual(len(loader), (IMAGES + 9) // 10)
        sizes = [y.shape[0] for _, y in epoch_batches(loader)]
        self.assertEqual(sizes, [10, 10, 10, 10, IMAGES - 40])


@unittest.skipIf(numpy is None, "numpy is not installed")
class Formats(unittest.TestCase):
    def test_webdataset_shards_and_a_pack_give_every_sample_once(self):
        binary = os.environ["GPUBASE_BIN"]
        shards = os.path.join(TMP, "shards")
        subprocess.run([binary, "dataset", "synth", "--out", shards, "--images", str(IMAGES),
                        "--classes", str(IMAGES), "--scale", "0.2", "--seed", "3",
                        "--threads", "2", "--layout", "shards", "--images-per-shard", "20"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pack = os.path.join(TMP, "set.gbpack")
        subprocess.run([binary, "dataset", "pack", "--data", CLEAN, "--out", pack], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for path in (shards, pack):
            with self.subTest(path=os.path.basename(path)):
                labels = numpy.concatenate([y for _, y in epoch_batches(cpu_loader(path))])
                self.assertEqual(sorted(labels.tolist()), list(range(IMAGES)))


@unittest.skipIf(numpy is None, "numpy is not installed")
class Sharding(unittest.TestCase):
    def test_ranks_are_disjoint_and_together_complete(self):
        seen = []
        for rank in range(3):
            loader = cpu_loader(batch_size=4, rank=rank, world_size=3, drop_last=False)
            self.assertEqual(len(loader), IMAGES // 3 // 4)
            seen.append(set(numpy.concatenate([y for _, y in epoch_batches(loader)]).tolist()))
        self.assertEqual(len(seen[0] | seen[1] | seen[2]), IMAGES)
        self.assertEqual(sum(len(s) for s in seen), IMAGES)

    def test_rank_outside_the_world_is_an_error(self):
        with self.assertRaises(gpubase.UsageError):
            cpu_loader(rank=2, world_size=2)


@unittest.skipIf(numpy is None, "numpy is not installed")
class Values(unittest.TestCase):
    def reference(self, epoch, number, **kw):
        args = dict(path=CLEAN, batch=8, size=SIZE, workers=1, seed=11, shuffle=True,
                    drop_last=True, rank=0, world_size=1, epoch=epoch, number=number)
        args.update(kw)
        pixels, labels, n = _gpubase.reference_batch(**args)
        return numpy.frombuffer(pixels, numpy.uint8).reshape(n, SIZE, SIZE, 3), numpy.array(labels)

    def test_normalized_batch_equals_the_cpp_loader_pixels(self):
        mean, std = (0.5, 0.25, 0.125), (0.2, 0.3, 0.4)
        loader = cpu_loader(mean=mean, std=std)
        loader.set_epoch(1)
        batches = epoch_batches(loader)
        px, labels = self.reference(1, 2)
        m = numpy.array([255 * v for v in mean], numpy.float32)
        s = numpy.float32(1) / numpy.array([255 * v for v in std], numpy.float32)
        expected = ((px.astype(numpy.float32) - m) * s).transpose(0, 3, 1, 2)
        numpy.testing.assert_array_equal(batches[2][1], labels)
        numpy.testing.assert_allclose(batches[2][0], expected, rtol=0, atol=1e-6)

    def test_nhwc_holds_the_same_values_as_nchw(self):
        nchw = epoch_batches(cpu_loader())
        nhwc = epoch_batches(cpu_loader(layout="NHWC"))
        numpy.testing.assert_array_equal(nchw[1][0], nhwc[1][0])


@unittest.skipIf(torch is None, "torch is not installed")
class Tensors(unittest.TestCase):
    def test_nchw_float32_is_contiguous_with_int64_labels(self):
        x, y = next(iter(cpu_loader()))
        self.assertEqual(tuple(x.shape), (8, 3, SIZE, SIZE))
        self.assertEqual(x.dtype, torch.float32)
        self.assertEqual(x.device.type, "cpu")
        self.assertTrue(x.is_contiguous())
        self.assertEqual(y.dtype, torch.int64)
        self.assertEqual(tuple(y.shape), (8,))

    def test_nhwc_is_channels_last(self):
        x, _ = next(iter(cpu_loader(layout="NHWC", dtype=torch.bfloat16)))
        self.assertEqual(tuple(x.shape), (8, 3, SIZE, SIZE))
        self.assertEqual(x.stride(), (3 * SIZE * SIZE, 1, 3 * SIZE, 3))
        self.assertTrue(x.is_contiguous(memory_format=torch.channels_last))
        self.assertEqual(x.dtype, torch.bfloat16)

    def test_half_and_bfloat16_round_the_float32_values(self):
        f32 = next(iter(cpu_loader()))[0]
        for dtype in (torch.float16, torch.bfloat16):
            low = next(iter(cpu_loader(dtype=dtype)))[0]
            self.assertEqual(low.dtype, dtype)
            torch.testing.assert_close(low, f32.to(dtype), rtol=0, atol=0)

    def test_a_tensor_outlives_its_loader(self):
        loader = cpu_loader()
        x, _ = next(iter(loader))
        before = x.clone()
        loader.close()
        del loader
        epoch_batches(cpu_loader())  # reuses freed memory elsewhere
        self.assertTrue(torch.equal(x, before))

    def test_numpy_arrays_without_torch(self):
        code = textwrap.dedent("""
            import sys
            sys.modules["torch"] = None
            import numpy, gpubase
            x, y = next(iter(gpubase.Loader(sys.argv[1], batch_size=8, size=32, workers=1,
                                            device="cpu", dtype="float32", layout="NHWC")))
            assert isinstance(x, numpy.ndarray) and x.dtype == numpy.float32, type(x)
            assert x.shape == (8, 3, 32, 32) and x.strides == (4 * 3 * 32 * 32, 4, 4 * 3 * 32, 12)
            assert y.dtype == numpy.int64 and y.shape == (8,)
            print("ok")
        """)
        r = subprocess.run([sys.executable, "-c", code, CLEAN], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ok", r.stdout)


@unittest.skipIf(numpy is None, "numpy is not installed")
class BadSamples(unittest.TestCase):
    def test_a_bad_file_is_substituted_and_counted(self):
        loader = cpu_loader(BROKEN, shuffle=False, batch_size=7)
        batches = epoch_batches(loader)
        self.assertTrue(all(y.shape[0] == 7 for _, y in batches))
        stats = loader.stats()
        self.assertEqual(stats["bad_samples"], 1)
        self.assertGreaterEqual(stats["substituted"], 1)
        self.assertTrue(any("zz_broken.jpg" in e for e in stats["bad_examples"]),
                        stats["bad_examples"])

    def test_strict_raises_naming_the_file(self):
        loader = cpu_loader(BROKEN, shuffle=False, strict=True)
        with self.assertRaises(gpubase.UsageError) as caught:
            epoch_batches(loader)
        self.assertIn("zz_broken.jpg", str(caught.exception))
        self.assertIsInstance(caught.exception, ValueError)


class Errors(unittest.TestCase):
    def test_without_torch_or_numpy_cpu_batches_are_refused(self):
        code = textwrap.dedent("""
            import sys
            sys.modules["torch"] = None
            sys.modules["numpy"] = None
            import gpubase
            try:
                gpubase.Loader(sys.argv[1], batch_size=8, size=32, workers=1, device="cpu")
            except gpubase.UsageError as e:
                print(e)
        """)
        r = subprocess.run([sys.executable, "-c", code, CLEAN], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("install torch or numpy", r.stdout)

    @unittest.skipIf(numpy is None and torch is None, "CPU batches need numpy or torch")
    def test_a_missing_path_names_it(self):
        with self.assertRaises(gpubase.UsageError) as caught:
            gpubase.Loader(os.path.join(TMP, "nowhere"), device="cpu", workers=1)
        self.assertIn("nowhere", str(caught.exception))

    def test_bad_options_are_usage_errors(self):
        bad = [dict(batch_size=0), dict(decode="fast"), dict(decode="gpu"), dict(layout="CHWN"),
               dict(dtype="int8"), dict(mean=(0.5, 0.5)), dict(std=(0.2, 0.0, 0.2)),
               dict(workers=0), dict(prefetch=0), dict(size=-3), dict(batch_size=IMAGES + 1)]
        for kw in bad:
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                with self.assertRaises(gpubase.UsageError):
                    cpu_loader(**kw)

    def test_a_gpu_without_one_is_no_gpu_error(self):
        if torch is None:
            self.skipTest("GPU tensors need torch")
        if torch.cuda.is_available():
            self.skipTest("this host has a GPU")
        with self.assertRaises(gpubase.NoGpuError):
            gpubase.Loader(CLEAN, batch_size=8, size=SIZE, workers=1, device=0)


@unittest.skipIf(numpy is None, "numpy is not installed")
class Figures(unittest.TestCase):
    def test_stats_has_stage_times_and_the_wait_share(self):
        loader = cpu_loader()
        epoch_batches(loader)
        s = loader.stats()
        self.assertEqual(s["images"], IMAGES)
        self.assertEqual(s["workers"], 2)
        for key in ("decode_ms_per_image", "augment_ms_per_image", "normalize_ms_per_image",
                    "read_ms_per_image"):
            self.assertGreater(s[key], 0, key)
        self.assertGreater(s["images_per_s"], 0)
        self.assertTrue(0 <= s["data_wait_share"] <= 1)

    def test_workers_none_sweeps_and_says_which(self):
        code = textwrap.dedent("""
            import sys, gpubase
            l = gpubase.Loader(sys.argv[1], batch_size=8, size=32, device="cpu")
            workers, rates, knee = l.worker_sweep
            assert l.workers == knee and knee in workers and all(r > 0 for r in rates)
            print(knee)
        """)
        r = subprocess.run([sys.executable, "-c", code, CLEAN], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("gpubase.Loader: %s workers, the knee of a sweep" % r.stdout.strip(),
                      r.stderr)


@unittest.skipIf(numpy is None, "numpy is not installed")
class Interrupt(unittest.TestCase):
    def test_ctrl_c_in_the_training_loop_stops_the_process(self):
        code = textwrap.dedent("""
            import sys, gpubase
            loader = gpubase.Loader(sys.argv[1], batch_size=8, size=32, workers=3, device="cpu",
                                    dtype="float32")
            started = False
            while True:
                for x, y in loader:
                    if not started:
                        print("started", flush=True)
                        started = True
        """)
        p = subprocess.Popen([sys.executable, "-c", code, CLEAN], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), "started")
            time.sleep(0.5)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("the process did not end within 20 s of Ctrl-C (threads left hanging)")
        self.assertIn("KeyboardInterrupt", err)
        self.assertNotEqual(p.returncode, 0)


if __name__ == "__main__":
    unittest.main()
