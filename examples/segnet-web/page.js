// The page: loads the WebAssembly module and the trained network, segments held-out scenes on
// the chosen device and draws them. `window.segnetState` holds what the last frame gave (read by
// check.py); `window.segnetShow(scene)` segments one scene and resolves when it is drawn.
import init, { Page, class_colours_css, class_names } from './pkg/segnet_web.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const state = { status: 'loading' };
window.segnetState = state;

let page = null;          // the network on the current device
let loaded = null;        // the run's files: { config, weights }
const frameTimes = {};    // device -> milliseconds of each frame, in order

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

async function show(scene) {
  const device = page.device;
  const started = performance.now();
  const frame = await page.segment(scene);
  const ms = performance.now() - started;
  const times = (frameTimes[device] ??= []);
  times.push(ms);

  draw($('input'), frame.width, frame.height, frame.image);
  draw($('overlay'), frame.width, frame.height, blend(frame.image, frame.prediction));
  draw($('truth'), frame.width, frame.height, frame.truth);
  $('accuracy').textContent = `${(100 * frame.pixel_accuracy).toFixed(2)} %`;
  const steady = times.length > 1 ? median(times.slice(1)) : null;
  $('time').textContent = `${ms.toFixed(1)} ms this frame` +
    (steady === null ? ' (the first on this device compiles its kernels)'
                     : `; median ${steady.toFixed(1)} ms after the first (${times[0].toFixed(0)} ms)`);
  Object.assign(state, {
    status: 'done', device, scene, width: frame.width, height: frame.height,
    pixel_accuracy: frame.pixel_accuracy, classes: Array.from(frame.classes),
    scores: Array.from(frame.scores), frame_ms: times.slice(),
  });
}
window.segnetShow = show;

async function useDevice(device) {
  say(`Loading the network on ${device === 'webgpu' ? 'WebGPU' : 'the CPU'}...`);
  try {
    page = await Page.load(loaded.config, loaded.weights, device);
  } catch (error) {
    if (device !== 'webgpu') throw error;
    say(`WebGPU did not start here (${error.message ?? error}): running on the CPU instead.`);
    page = await Page.load(loaded.config, loaded.weights, 'cpu');
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
  const started = performance.now();
  const wasm = await fetchOk('pkg/segnet_web_bg.wasm');
  await init({ module_or_path: wasm });
  const [config, weights] = await Promise.all([
    fetchOk('weights/config.json', 'text'), fetchOk('weights/model.bpk')]);
  loaded = { config, weights };
  state.load_ms = performance.now() - started;
  state.wasm_bytes = wasm.length;
  state.weights_bytes = weights.length;
  $('load').textContent = `${(wasm.length / 1048576).toFixed(1)} MiB of WebAssembly and ` +
    `${(weights.length / 1024).toFixed(0)} KiB of weights in ${state.load_ms.toFixed(0)} ms`;

  const colours = class_colours_css();
  $('legend').innerHTML = class_names()
    .map((name, i) => `<span style="--c: ${colours[i]}">${name}</span>`).join('');

  // Without navigator.gpu nothing of WebGPU is tried: the CPU it is, whatever was asked.
  const hasWebGpu = 'gpu' in navigator;
  const device = hasWebGpu ? (params.get('device') ?? 'webgpu') : 'cpu';
  if (!hasWebGpu) document.querySelector('input[value=webgpu]').disabled = true;
  await useDevice(device);
  if (!hasWebGpu) say('This browser has no WebGPU: the network runs on the CPU.');
  $('scene').value = params.get('scene') ?? '0';
  await show(Number($('scene').value));

  const rerun = async (work) => {
    try { await work(); } catch (error) { fail(String(error.message ?? error)); }
  };
  $('next').onclick = () => rerun(async () => {
    $('scene').value = Number($('scene').value) + 1;
    await show(Number($('scene').value));
  });
  $('scene').onchange = () => rerun(() => show(Number($('scene').value)));
  for (const radio of document.querySelectorAll('input[name=device]')) {
    radio.onchange = () => rerun(async () => {
      await useDevice(radio.value);
      await show(Number($('scene').value));
    });
  }
}

main().catch((error) => fail(`The page could not start: ${error.message ?? error}`));
