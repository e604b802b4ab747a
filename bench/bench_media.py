"""Benchmark the media pipeline: how fast is a browser proxy made, how long does probing take?

Standalone: ``.venv/bin/python bench/bench_media.py [--duration 10] [--size 1280x720]``.
Synthesises a clip (default: a 10 s 1280x720 camera pan, the most detailed synthetic kind), then
times ``probe`` and ``make_proxy`` and prints the transcode speed as a multiple of real time
(clip seconds per wall-clock second; above 1 means faster than playback).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import benchlib  # noqa: F401 - puts the repository on the import path

from annotation.media import video as media  # noqa: E402 - needs the repository root on sys.path first


def _size(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    return int(width), int(height)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="clip seconds (10)")
    parser.add_argument("--size", type=_size, default=(1280, 720), help="WxH (1280x720)")
    parser.add_argument("--fps", type=int, default=25, help="frames per second (25)")
    parser.add_argument("--kind", default="camera_pan", choices=sorted(media.SYNTHETIC_KINDS))
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each step (3)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="redline-bench-") as tmp:
        source = Path(tmp) / "source.mp4"
        proxy = Path(tmp) / "proxy.mp4"

        started = time.perf_counter()
        media.synthesize_clip(
            args.kind, source, duration=args.duration, size=args.size, fps=args.fps
        )
        synth_s = time.perf_counter() - started

        probe_times, proxy_times = [], []
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = media.probe(source)
            probe_times.append(time.perf_counter() - started)
        for _ in range(args.repeat):
            started = time.perf_counter()
            media.make_proxy(source, proxy)
            proxy_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        media.sha256_file(source)
        hash_s = time.perf_counter() - started

        proxy_s = statistics.median(proxy_times)
        width, height = args.size
        print(f"machine: {os.cpu_count()} CPUs")
        print(
            f"clip: {args.kind}, {result.duration:.2f} s, {width}x{height} @ {args.fps} fps, "
            f"{source.stat().st_size / 1e6:.2f} MB (synthesised in {synth_s:.2f} s)"
        )
        probe_ms = statistics.median(probe_times) * 1000
        print(
            f"probe (ffprobe + last-second decode): median {probe_ms:.0f} ms "
            f"over {args.repeat} runs"
        )
        print(
            f"make_proxy (libx264 {media.PROXY_PRESET}, crf {media.PROXY_CRF}): median "
            f"{proxy_s:.2f} s over {args.repeat} runs = {result.duration / proxy_s:.1f}x real time "
            f"(proxy {proxy.stat().st_size / 1e6:.2f} MB)"
        )
        print(f"sha256_file: {hash_s * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
