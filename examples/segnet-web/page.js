// The page: loads the WebAssembly module and the trained network, segments held-out scenes, or
// an image the user picks or drops, on the chosen device and draws them. `window.segnetState`
// holds what the last frame gave (read by check.py); `window.segnetShow(scene)` segments one
// scene (a number, or text as the scene box takes it) and resolves when it is drawn; `window.segnetIdle()` resolves when the queued work is done.
// The module's glue is imported inside main(), so that a missing pkg/ is said on the page.
let wasm = null;          // the glue: init, Page, class_names, class_colours_css

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const state = { status: 'loading' };
window.segnetState = state;

let page = null;          // the network on the current device
let loaded = null;        // the run's files: { config, weights }
const frameTimes = {};    // device -> milliseconds of each frame, in order
let shownScene = null;    // the held-out scene last drawn (not a user's image)

function say(text, kind = 'info') {
  state.notice = text;
  const box = $('message');
  box.textContent = text;
  box.className = text ? kind : '';
}

function fail(text) {
  say(text, 'error');
  state.status = 'error';
  state.message = text;
}

async function fetchOk(path, as) {
  const response = await fetch(path);
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return as === 'text' ? response.text() : new Uint8Array(await response.arrayBuffer());
}

function draw(canvas, width, height, rgba) {
  canvas.width = width;
  canvas.height = height;
  canvas.getContext('2d').putImageData(new ImageData(new Uint8ClampedArray(rgba), width, height), 0, 0);
}

// The prediction's colours over the scene, 60 % opaque.
function blend(scene, prediction) {
  const out = new Uint8Array(scene.length);
  for (let i = 0; i < scene.length; i += 4) {
    for (let c = 0; c < 3; c++) out[i + c] = 0.4 * scene[i + c] + 0.6 * prediction[i + c];
    out[i + 3] = 255;
  }
  return out;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

// Draws a frame of the module's and records it; `source` says what it was made from.
function present(frame, ms, source) {
  const device = page.device;
  const f = {
    width: frame.width, height: frame.height, image: frame.image, truth: frame.truth,
    prediction: frame.prediction, classes: frame.classes, scores: frame.scores,
    pixel_accuracy: frame.pixel_accuracy ?? null,
  };
  frame.free();             // every field is copied out above: free its memory in the module
  const times = (frameTimes[device] ??= []);
  times.push(ms);

  draw($('input'), f.width, f.height, f.image);
  draw($('overlay'), f.width, f.height, blend(f.image, f.prediction));
  draw($('truth'), f.width, f.height, f.truth);
  const labelled = f.pixel_accuracy !== null;
  $('truth-caption').textContent = labelled ? 'True classes' : 'True classes: none for your image';
  $('accuracy').textContent = labelled ? `${(100 * f.pixel_accuracy).toFixed(2)} %`
                                       : '- (your image has no true classes)';
  const steady = times.length > 1 ? median(times.slice(1)) : null;
  $('time').textContent = `${ms.toFixed(1)} ms this frame` +
    (steady === null ? ' (the first on this device compiles its kernels)'
                     : `; median ${steady.toFixed(1)} ms after the first (${times[0].toFixed(0)} ms)`);
  for (const key of ['scene', 'image']) delete state[key];
  Object.assign(state, {
    status: 'done', device, ...source, width: f.width, height: f.height,
    pixel_accuracy: f.pixel_accuracy, classes: Array.from(f.classes),
    scores: Array.from(f.scores), frame_ms: times.slice(),
  });
}

// The scene a box's or an address's text names, through the module's one reading of it; where
// it names none, the box goes back to the scene shown and the module's message is raised.
async function show(text) {
  let scene;
  try {
    scene = page.scene_number(String(text));
  } catch (error) {
    $('scene').value = shownScene ?? '';
    throw error;
  }
  $('scene').value = scene;
  const started = performance.now();
  const frame = await page.segment(scene);
  present(frame, performance.now() - started, { scene });
  shownScene = scene;
}

// An image of the user's: the file's bytes go to the module, which decodes them by the same rule
// as the native `segment --image` (alpha dropped, the colours kept; 16-bit rounded), scales them
// to the size the network was trained at (an image of that size is taken pixel for pixel) and
// segments it. The browser's canvas would premultiply alpha and lose the colours.
async function showImage(file) {
  if (!page) throw new Error('the network is not loaded: there is nothing to segment with');
  if (!file.type.startsWith('image/')) {
    throw new Error(`${file.name} is not an image (${file.type || 'a file of no known type'})`);
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  const started = performance.now();
  let frame;
  try {
    frame = await page.segment_file(bytes);
  } catch (error) {
    throw new Error(`${file.name}: ${error.message ?? error}`);
  }
  present(frame, performance.now() - started, { image: file.name });
}

window.segnetShow = (scene) => enqueue(() => show(scene));
window.segnetIdle = () => queue;

// Every piece of work (a device switch, a frame) runs after the one before: clicks during a long
// first frame wait their turn instead of overlapping it.
let queue = Promise.resolve();
function enqueue(work) {
  queue = queue.then(async () => {
    if (state.status === 'error') { say(''); delete state.message; }
    await work();
  }).catch((error) => fail(String(error.message ?? error)));
  return queue;
}

async function useDevice(device) {
  say(`Loading the network on ${device === 'webgpu' ? 'WebGPU' : 'the CPU'}...`);
  page?.free();
  page = null;
  try {
    page = await wasm.Page.load(loaded.config, loaded.weights, device);
  } catch (error) {
    if (device !== 'webgpu') throw error;
    say(`WebGPU did not start here (${error.message ?? error}): running on the CPU instead.`);
    page = await wasm.Page.load(loaded.config, loaded.weights, 'cpu');
    document.querySelector('input[value=webgpu]').disabled = true;
    document.querySelector('input[value=cpu]').checked = true;
    $('device').textContent = 'CPU (Flex, WebAssembly)';
    return;
  }
  document.querySelector(`input[value=${device}]`).checked = true;
  $('device').textContent = device === 'webgpu' ? 'WebGPU' : 'CPU (Flex, WebAssembly)';
  say('');
}

async function main() {
  if (typeof WebAssembly !== 'object') {
    fail('This page needs WebAssembly, which this browser does not offer.');
    return;
  }
  // The controls first: what they ask for waits in the queue behind the first frame.
  // After the last held-out scene, the first: the box shows which.
  $('next').onclick = () => enqueue(() => show(((shownScene ?? -1) + 1) % page.held_out));
  $('scene').onchange = () => enqueue(() => show($('scene').value));
  $('file').onchange = () => {
    const file = $('file').files[0];
    if (file) enqueue(() => showImage(file));
    $('file').value = '';   // the same file picked again is a new choice
  };
  // An image dropped anywhere on the page; while one is dragged over, the page is outlined.
  document.addEventListener('dragover', (event) => {
    if (!event.dataTransfer?.types.includes('Files')) return;
    event.preventDefault();
    document.body.classList.add('dragging');
  });
  document.addEventListener('dragleave', (event) => {
    if (event.relatedTarget === null) document.body.classList.remove('dragging');
  });
  document.addEventListener('drop', (event) => {
    event.preventDefault();
    document.body.classList.remove('dragging');
    const file = event.dataTransfer?.files[0];
    if (file) enqueue(() => showImage(file));
  });
  for (const radio of document.querySelectorAll('input[name=device]')) {
    radio.onchange = () => enqueue(async () => {
      await useDevice(radio.value);
      await show(shownScene ?? 0);
    });
  }

  await enqueue(async () => {
    const started = performance.now();
    try {
      wasm = await import('./pkg/segnet_web.js');
    } catch (error) {
      throw new Error(`the module's glue pkg/segnet_web.js did not load (${error.message ?? error}); ` +
        'build it as the README says');
    }
    const module = await fetchOk('pkg/segnet_web_bg.wasm');
    await wasm.default({ module_or_path: module });
    const [config, weights] = await Promise.all([
      fetchOk('weights/config.json', 'text'), fetchOk('weights/model.bpk')]);
    loaded = { config, weights };
    state.load_ms = performance.now() - started;
    state.wasm_bytes = module.length;
    state.weights_bytes = weights.length;
    $('load').textContent = `${(module.length / 1048576).toFixed(1)} MiB of WebAssembly and ` +
      `${(weights.length / 1024).toFixed(0)} KiB of weights in ${state.load_ms.toFixed(0)} ms`;

    const colours = wasm.class_colours_css();
    $('legend').innerHTML = wasm.class_names()
      .map((name, i) => `<span style="--c: ${colours[i]}">${name}</span>`).join('');

    // Without navigator.gpu nothing of WebGPU is tried: the CPU it is, whatever was asked.
    const hasWebGpu = 'gpu' in navigator;
    const device = hasWebGpu ? (params.get('device') ?? 'webgpu') : 'cpu';
    if (!hasWebGpu) document.querySelector('input[value=webgpu]').disabled = true;
    await useDevice(device);
    if (!hasWebGpu) say('This browser has no WebGPU: the network runs on the CPU.');
    $('scene').max = page.held_out - 1;
    const asked = params.get('scene') ?? '0';
    try {
      await show(asked);
    } catch (error) {
      await show(0);
      say(`The address asks for a scene the page cannot show (${error.message ?? error}): ` +
          'showing scene 0.', 'error');
    }
  });
}

main().catch((error) => fail(`The page could not start: ${error.message ?? error}`));
