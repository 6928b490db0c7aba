#!/usr/bin/env python3
"""Builds the page, opens it in headless Chromium and checks what it computes.

    python3 examples/segnet-web/check.py                         # the CPU (Flex) in the page
    python3 examples/segnet-web/check.py --device webgpu         # the browser's WebGPU (SwiftShader)
    python3 examples/segnet-web/check.py --screenshot page.png   # also keep what the page showed
    python3 examples/segnet-web/check.py --without-webgpu        # a browser whose WebGPU has no adapter

1. Builds the module (`cargo build --profile web --target wasm32-unknown-unknown -p segnet-web`) and
   its JavaScript glue (`wasm-bindgen --target web`) into `examples/segnet-web/pkg/`.
2. Serves the example's folder on the loopback address and opens `index.html` in headless
   Chromium through chromedriver (WebDriver over HTTP), on the device asked for; waits for the
   page to segment a held-out scene, then segments it again (`--frames`) for the time per frame.
   With `--without-webgpu`, Chromium runs with WebGPU disabled (`navigator.gpu` is there, no
   adapter is): the page is asked for WebGPU and must say so and fall back to the CPU.
   Then drops files on the page as a user would (a drop event carrying the file): a text file,
   which the page must refuse with a message naming it, then the next held-out scenes as images
   of the user's, each of the network's size: a PNG (written by the `segment` binary), a PNG with
   transparent and half-transparent pixels whose colours are kept, a JPEG (written by `segment`)
   and a 16-bit PNG whose samples round to the scene's (both PNGs written here).
   Then opens the page at `?scene=-1`, which it must refuse with a message and show scene 0, and
   types a scene number past the held-out split into the scene box (refused with a message, the
   box back at the scene shown), then a good one, which it must segment.
3. Segments the same scene natively on Flex (the `segment` binary of this package), with the
   same weights, and compares: every score within `--tolerance` of the largest score's size, and
   the class of every pixel the same, except where the native model's two best scores are within
   that tolerance of each other (counted and printed); the pixel accuracy of both at least
   `--min-accuracy`. Each dropped image likewise, against the binary's result for the same file;
   natively, the transparent and the 16-bit PNGs must segment exactly as their 8-bit opaque
   scenes do (alpha dropped and the colours kept; 16-bit samples rounded to the nearest 8-bit).

Needs chromium, chromedriver, the wasm32 standard library and wasm-bindgen's CLI at the version
in Cargo.lock (`.ci/wasm` installs them all). Exits 1 on a failed check.
"""

import argparse
import base64
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
import urllib.error
import urllib.request
from pathlib import Path

PAGE = Path(__file__).resolve().parent
ROOT = PAGE.parent.parent


def run(command, **kwargs):
    print("$", " ".join(str(part) for part in command), flush=True)
    return subprocess.run(command, cwd=ROOT, check=True, **kwargs)


def build(target_dir):
    """The module (the workspace's `web` profile) and its glue in pkg/; returns its size in bytes."""
    env = dict(os.environ)
    if target_dir:
        env["CARGO_TARGET_DIR"] = str(target_dir)
    cargo = run(["cargo", "build", "--profile", "web", "--target", "wasm32-unknown-unknown",
                 "-p", "segnet-web", "--lib", "--message-format", "json-render-diagnostics"],
                env=env, stdout=subprocess.PIPE, text=True)
    modules = [name for line in cargo.stdout.splitlines()
               for name in json.loads(line).get("filenames") or []
               if name.endswith("/segnet_web.wasm")]
    if not modules:
        sys.exit("cargo built no segnet_web.wasm")
    shutil.rmtree(PAGE / "pkg", ignore_errors=True)
    # The name section (function names for stack traces, 17 % of the module) stays out.
    run(["wasm-bindgen", "--target", "web", "--no-typescript", "--remove-name-section",
         "--out-dir", PAGE / "pkg", modules[0]])
    return (PAGE / "pkg" / "segnet_web_bg.wasm").stat().st_size


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_png_rgb8(data):
    """The pixels of an 8-bit RGB PNG without interlace (what the `segment` binary writes), as
    rows of bytes; returns (width, height, rows)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height = int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")
    if header[8:13] != bytes([8, 2, 0, 0, 0]):
        sys.exit(f"an 8-bit RGB PNG without interlace was expected, not {list(header[8:13])}")
    raw, stride, rows, previous = zlib.decompress(idat), 3 * width, [], bytes(3 * width)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - 3] if i >= 3 else 0
            up, corner = previous[i], previous[i - 3] if i >= 3 else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def write_png(width, height, bit_depth, colour_type, rows):
    """A PNG of `rows` (bytes each, filter 0): colour type 2 (RGB) or 6 (RGBA)."""
    def chunk(kind, body):
        return (len(body).to_bytes(4, "big") + kind + body
                + zlib.crc32(kind + body).to_bytes(4, "big"))
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + \
        bytes([bit_depth, colour_type, 0, 0, 0])
    pixels = zlib.compress(b"".join(b"\x00" + row for row in rows))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))


def transparent_png(width, height, rows):
    """The scene with alpha: its right half fully transparent, every other row of its left half
    at alpha 128, the rest opaque; every colour as the scene's."""
    def alpha(x, y):
        return 0 if x >= width // 2 else 128 if y % 2 else 255
    return write_png(width, height, 8, 6, [
        b"".join(row[3 * x:3 * x + 3] + bytes([alpha(x, y)]) for x in range(width))
        for y, row in enumerate(rows)])


def sixteen_bit_png(width, height, rows):
    """The scene in 16 bits: each sample v as 257 v + d, d from -127 to 127 across the pixels, so
    that the nearest 8-bit sample is v again (the high byte alone would be v - 1 where d < 0)."""
    def sample(v, x, y, c):
        return min(65535, max(0, 257 * v + (x * 7 + y * 13 + c * 29) % 255 - 127))
    return write_png(width, height, 16, 2, [
        b"".join(sample(row[3 * x + c], x, y, c).to_bytes(2, "big")
                 for x in range(width) for c in range(3))
        for y, row in enumerate(rows)])


def serve(directory):
    """A static server of `directory` on the loopback address, in a thread; returns its port."""
    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                          ".wasm": "application/wasm", ".js": "text/javascript"}

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


class WebDriver:
    """The few WebDriver commands the check needs, over chromedriver's HTTP."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.session = None

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as error:
            sys.exit(f"WebDriver {method} {path}: {error.read().decode(errors='replace')[:2000]}")

    def start(self, args):
        capabilities = {"browserName": "chrome",
                        "goog:chromeOptions": {"binary": shutil.which("chromium"), "args": args}}
        value = self.call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})
        self.session = value["sessionId"]
        self.call("POST", f"/session/{self.session}/timeouts", {"script": 600_000})

    def go(self, url):
        self.call("POST", f"/session/{self.session}/url", {"url": url})

    def script(self, source, *args):
        return self.call("POST", f"/session/{self.session}/execute/sync",
                         {"script": source, "args": list(args)})

    def async_script(self, source, *args):
        return self.call("POST", f"/session/{self.session}/execute/async",
                         {"script": source, "args": list(args)})

    def screenshot(self):
        return base64.b64decode(self.call("GET", f"/session/{self.session}/screenshot"))

    def quit(self):
        if self.session:
            self.call("DELETE", f"/session/{self.session}")


def drop(webdriver, name, mime, data):
    """The page's state after a file (`data`, bytes) is dropped on it and its work is done."""
    error = webdriver.async_script(
        """const [name, type, base64, done] = arguments;
           const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
           const transfer = new DataTransfer();
           transfer.items.add(new File([bytes], name, { type }));
           document.body.dispatchEvent(new DragEvent('drop', {
             dataTransfer: transfer, bubbles: true, cancelable: true }));
           window.segnetIdle().then(() => done(null), (e) => done(String(e)));""",
        name, mime, base64.b64encode(data).decode())
    if error:
        sys.exit(f"dropping {name} on the page: {error}")
    return webdriver.script("return window.segnetState;")


def first_frame(webdriver, url, timeout):
    """The page's state once it has drawn its first frame at `url` (or failed, or timed out)."""
    webdriver.go(url)
    deadline = time.monotonic() + timeout
    started = time.monotonic()
    while True:
        state = webdriver.script("return window.segnetState || {status: 'no script yet'};")
        if state.get("status") in ("done", "error") or time.monotonic() > deadline:
            return state
        if state.get("status") == "no script yet" and time.monotonic() - started > 30:
            return state  # page.js itself did not run: nothing will come
        time.sleep(0.5)


def type_scene(webdriver, text):
    """The page's state, and its scene box's text, after `text` is typed into the box."""
    error = webdriver.async_script(
        """const [text, done] = arguments;
           const box = document.getElementById('scene');
           box.value = text;
           box.dispatchEvent(new Event('change'));
           window.segnetIdle().then(() => done(null), (e) => done(String(e)));""", text)
    if error:
        sys.exit(f"typing {text} into the scene box: {error}")
    return webdriver.script("return [window.segnetState, document.getElementById('scene').value];")


def in_browser(args, port, images):
    """What the page computed: its state after `args.frames` frames of the scene, after a text
    file is dropped on it, after each of `images` ([(name, mime, bytes)]) is, and what it did
    with scene numbers it cannot show (`scenes`: the states after each step)."""
    driver_port = free_port()
    driver = subprocess.Popen(["chromedriver", f"--port={driver_port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    webdriver = WebDriver(driver_port)
    try:
        for _ in range(100):
            try:
                if webdriver.call("GET", "/status").get("ready"):
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.1)
        chrome_args = ["--headless", "--no-sandbox", "--disable-dev-shm-usage",
                       "--window-size=900,800", "--hide-scrollbars"]
        if args.device == "webgpu":
            chrome_args.append("--enable-unsafe-webgpu")
        asked = args.device
        if args.without_webgpu:
            chrome_args.append("--disable-features=WebGPU")
            asked = "webgpu"
        webdriver.start(chrome_args)
        print(f"{webdriver.call('GET', '/status').get('build', {}).get('version', 'chromedriver')}"
              f"; the page on {args.device}, scene {args.scene}", flush=True)
        address = f"http://127.0.0.1:{port}/index.html?device={asked}"
        state = first_frame(webdriver, f"{address}&scene={args.scene}", args.timeout)
        if state.get("status") == "done":
            error = webdriver.async_script(
                """const [scene, frames, done] = arguments;
                   (async () => { for (let i = 1; i < frames; i++) await window.segnetShow(scene); })()
                     .then(() => done(null), (e) => done(String(e)));""",
                args.scene, args.frames)
            if error:
                sys.exit(f"segmenting again in the page: {error}")
            state = webdriver.script("return window.segnetState;")
        if args.screenshot:
            args.screenshot.write_bytes(webdriver.screenshot())
            print(f"screenshot: {args.screenshot}")
        if state.get("status") != "done":
            return state, None, None, None
        refused = drop(webdriver, "notes.txt", "text/plain", b"not a picture")
        dropped = {name: drop(webdriver, name, mime, data) for name, mime, data in images}
        scenes = {"address": first_frame(webdriver, f"{address}&scene=-1", args.timeout)}
        scenes["past"] = type_scene(webdriver, "99999999999")
        scenes["good"] = type_scene(webdriver, "3")
        return state, refused, dropped, scenes
    finally:
        try:
            webdriver.quit()
        finally:
            driver.terminate()
            driver.wait()


def segment_binary():
    """The `segment` binary. Built by the README's test command (its integration tests run it),
    whose build this reuses: a build of this package alone, or without the tests'
    dev-dependencies, has other Burn features and would compile Burn again."""
    cargo = run(["cargo", "test", "--workspace", "--features", "burn-unpool-tests/wgpu",
                 "--no-run", "--message-format", "json-render-diagnostics"],
                stdout=subprocess.PIPE, text=True)
    binaries = [json.loads(line).get("executable") for line in cargo.stdout.splitlines()]
    binary = next((b for b in binaries if b and Path(b).name == "segment"), None)
    if binary is None:
        sys.exit("the test build made no `segment` binary")
    return binary


def native(binary, *args):
    """The `segment` binary's result with `args`."""
    output = run([binary, *map(str, args)], stdout=subprocess.PIPE, text=True)
    return json.loads(output.stdout)


def compare(page, reference, args, labelled=True):
    """Failures (empty where the page agrees with the native model); prints the counts. Where
    `labelled`, both pixel accuracies must reach `--min-accuracy`; where not, both must be null."""
    if len(page["scores"]) != len(reference["scores"]) or \
            len(page["classes"]) != len(reference["classes"]):
        return [f"the page gave {len(page['scores'])} scores and {len(page['classes'])} classes, "
                f"natively {len(reference['scores'])} and {len(reference['classes'])}"]
    failures = []
    classes = len(reference["scores"]) // len(reference["classes"])
    plane = len(reference["classes"])
    largest = max(abs(s) for s in reference["scores"])
    difference = max(abs(a - b) for a, b in zip(page["scores"], reference["scores"]))
    tolerance = args.tolerance * largest
    print(f"scores: largest |difference| {difference:.3g} (tolerance {tolerance:.3g}, "
          f"{args.tolerance:g} of the largest score {largest:.3g})")
    if difference > tolerance:
        failures.append("the page's scores differ from the native model's beyond the tolerance")
    differing, close = 0, 0
    for pixel in range(plane):
        scores = sorted((reference["scores"][c * plane + pixel] for c in range(classes)),
                        reverse=True)
        near_tie = scores[0] - scores[1] <= tolerance
        close += near_tie
        if page["classes"][pixel] != reference["classes"][pixel]:
            differing += 1
            if not near_tie:
                failures.append(f"pixel {pixel}: class {page['classes'][pixel]} in the page, "
                                f"{reference['classes'][pixel]} natively, margin "
                                f"{scores[0] - scores[1]:.3g}")
    print(f"classes: {plane - differing} of {plane} pixels the same; {differing} differ; "
          f"{close} pixels have their two best scores within the tolerance")
    for name, result in (("page", page), ("native", reference)):
        accuracy = result["pixel_accuracy"]
        if not labelled:
            if accuracy is not None:
                failures.append(f"{name} gave a pixel accuracy for an image without labels")
        elif accuracy is None:
            failures.append(f"{name} gave no pixel accuracy for a scene")
        else:
            print(f"pixel accuracy ({name}): {100 * accuracy:.2f} %")
            if accuracy < args.min_accuracy:
                failures.append(f"{name} pixel accuracy {accuracy:.4f} below {args.min_accuracy}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["cpu", "webgpu"], default="cpu")
    parser.add_argument("--without-webgpu", action="store_true",
                        help="ask for WebGPU in a browser without it: the page must use the CPU")
    parser.add_argument("--scene", type=int, default=0, help="held-out scene (default 0)")
    parser.add_argument("--frames", type=int, default=5, help="frames timed (default 5)")
    parser.add_argument("--min-accuracy", type=float, default=0.95)
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="score differences allowed, as a share of the largest score")
    parser.add_argument("--screenshot", type=Path, help="PNG of the page after the frames")
    parser.add_argument("--wasm-target-dir", type=Path,
                        help="cargo's target directory for the WebAssembly build")
    parser.add_argument("--timeout", type=float, default=300, help="seconds for the first frame")
    args = parser.parse_args()
    if args.without_webgpu and args.device != "cpu":
        parser.error("--without-webgpu checks the CPU fallback: leave --device out")

    wasm_size = build(args.wasm_target_dir)
    binary = segment_binary()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        # The next held-out scenes, one per kind of file a user gives: scenes 1, 2 and 4 after
        # the page's as PNG (2 and 4 made transparent and 16-bit below), 3 as JPEG.
        scene_files = {k: folder / f"scene-{args.scene + k}.png" for k in (1, 2, 4)}
        for k, path in scene_files.items():
            native(binary, "--scene", args.scene + k, "--save-scene", path)
        native(binary, "--scene", args.scene + 3, "--save-scene", folder / "scene.jpg")
        width, height, rows = read_png_rgb8(scene_files[2].read_bytes())
        (folder / "transparent.png").write_bytes(transparent_png(width, height, rows))
        width, height, rows = read_png_rgb8(scene_files[4].read_bytes())
        (folder / "sixteen-bit.png").write_bytes(sixteen_bit_png(width, height, rows))
        images = [("scene.png", "image/png", scene_files[1]),
                  ("transparent.png", "image/png", folder / "transparent.png"),
                  ("scene.jpg", "image/jpeg", folder / "scene.jpg"),
                  ("sixteen-bit.png", "image/png", folder / "sixteen-bit.png")]
        page, refused, dropped, scenes = in_browser(
            args, serve(PAGE), [(name, mime, path.read_bytes()) for name, mime, path in images])
        references = {name: native(binary, "--image", path) for name, _, path in images}
        opaque = {"transparent.png": native(binary, "--image", scene_files[2]),
                  "sixteen-bit.png": native(binary, "--image", scene_files[4])}
    if page.get("status") != "done":
        sys.exit(f"the page did not segment the scene: {page.get('message', page.get('status'))}")
    if page["device"] != args.device:
        sys.exit(f"the page ran on {page['device']}, not {args.device}")
    if args.without_webgpu:
        notice = page.get("notice", "")
        if "WebGPU did not start here" not in notice or "running on the CPU" not in notice:
            sys.exit(f"the page fell back without saying why: {notice!r}")
        print(f"the page said: {notice}")
    times = page["frame_ms"]
    steady = sorted(times[1:])[len(times[1:]) // 2] if len(times) > 1 else float("nan")
    print(f"page: device {page['device']}; {wasm_size / 1048576:.2f} MiB module, "
          f"{page['weights_bytes'] / 1024:.0f} KiB weights, loaded in {page['load_ms']:.0f} ms; "
          f"first frame {times[0]:.1f} ms, median of the next {len(times) - 1}: {steady:.1f} ms")
    failures = compare(page, native(binary, "--scene", args.scene), args)

    print(f"a text file dropped on the page: {refused.get('status')}: {refused.get('message')!r}")
    if refused.get("status") != "error" or "notes.txt is not an image" not in \
            refused.get("message", ""):
        failures.append("the page did not refuse a text file by name")
    for name, image in dropped.items():
        if image.get("status") != "done" or image.get("image") != name:
            failures.append(f"the dropped {name} was not segmented: {image.get('status')}: "
                            f"{image.get('message')!r}")
            continue
        print(f"{name} dropped on the page, {image['width']} x {image['height']}, "
              f"{image['frame_ms'][-1]:.1f} ms:")
        failures += compare(image, references[name], args, labelled=False)
    for name, reference in opaque.items():
        if references[name]["scores"] != reference["scores"]:
            failures.append(f"natively, {name} does not segment as its opaque 8-bit scene does")
        else:
            print(f"natively, {name} segments exactly as its opaque 8-bit scene does")

    address, (past, past_box), (good, good_box) = scenes["address"], scenes["past"], scenes["good"]
    print(f"?scene=-1: {address.get('status')}, scene {address.get('scene')}: "
          f"{address.get('notice')!r}")
    if address.get("status") != "done" or address.get("scene") != 0 or \
            '"-1" is not a scene number' not in address.get("notice", ""):
        failures.append("the page did not refuse ?scene=-1 with a message and show scene 0")
    print(f"99999999999 typed into the scene box: {past.get('status')}: {past.get('message')!r}; "
          f"the box says {past_box}")
    if past.get("status") != "error" or past_box != "0" or \
            "there is no held-out scene 99999999999: the run's 320 held-out scenes are numbered " \
            "0 to 319" not in past.get("message", ""):
        failures.append("the page did not refuse scene 99999999999 with a message")
    print(f"3 typed into the scene box: {good.get('status')}, scene {good.get('scene')}")
    if good.get("status") != "done" or good.get("scene") != 3 or good_box != "3":
        failures.append("the page did not segment scene 3 after refusing a scene number")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures[:20]))
        sys.exit(1)
    print("the page agrees with the native model, on the scene and on the dropped images, and "
          "refuses the scene numbers it cannot show")


if __name__ == "__main__":
    main()
