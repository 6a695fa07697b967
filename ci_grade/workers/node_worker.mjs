// The program a Node.js worker runs: read a call, run the user's JavaScript, answer; until EOF.
//
// Requests are frames (a 4-byte big-endian length, then UTF-8 JSON) on stdin; answers go to the
// descriptor whose number ends the command line, so what user code prints (its stdout) cannot
// mix with them. A request names a function of a file (`file`, `function`, `args`; with `data`, an
// export that is not a function is the answer as it is), or a provider
// (`provider`: a file whose export, or the export at the dotted path `export`, is a class, made
// once per file and options as promptfoo makes it, `new Provider(options)`) and one of its methods (`method`, `args`); with the process
// environment (`env`) and working folder (`cwd`) when they changed since the last call. The
// answer is {"value": ...}, {"error": text} (the code threw, or returned what is not JSON data)
// or {"abort": text} (it called process.exit: ci-grade replaces this worker).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const replyFd = Number(process.argv[process.argv.length - 1]);
const exit = process.exit.bind(process);
const modules = new Map();
const providers = new Map();
let stage = null;

process.on('SIGINT', () => {}); // ci-grade decides when its workers stop
process.exit = (code) => {
  if (stage !== null) {
    send({ abort: `called process.exit(${code === undefined ? '' : code}) ${stage}` });
  }
  exit(code);
};

function send(message) {
  const body = Buffer.from(JSON.stringify(message), 'utf8');
  const frame = Buffer.alloc(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  body.copy(frame, 4);
  let offset = 0;
  while (offset < frame.length) {
    try {
      offset += fs.writeSync(replyFd, frame, offset);
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err;
    }
  }
}

async function loadModule(file) {
  const stamp = fs.statSync(file).mtimeMs;
  const known = modules.get(file);
  if (known && known.stamp === stamp) return known.module;
  const url = pathToFileURL(file).href + (known ? `?changed=${stamp}` : '');
  const imported = await import(url);
  const module = { imported, main: imported?.default?.default || imported?.default || imported };
  modules.set(file, { stamp, module });
  return module;
}

async function loadExport(file, name) {
  const { imported, main } = await loadModule(file);
  // `module.exports = check` named as `file://x.js:check` is that function, as promptfoo finds it
  return name ? (main?.[name] ?? imported[name] ?? (typeof main === 'function' && main.name === name ? main : undefined)) : main;
}

async function loadFunction(file, name) {
  const fn = await loadExport(file, name);
  if (typeof fn !== 'function') {
    throw new Error(`${path.basename(file)} has no function ${name || "(default export)"}`);
  }
  return fn;
}

// `package:NAME:Export.Path`: the export at a dotted path of the package's module, as promptfoo finds it.
function exported(module, dotted) {
  const walk = (from) => dotted.split('.').reduce((value, key) => (value == null ? undefined : value[key]), from);
  const found = walk(module.main) ?? walk(module.imported);
  if (typeof found !== 'function') {
    throw new Error(`the package's export ${dotted} must be a provider class, got ${found === undefined ? 'nothing' : typeof found}`);
  }
  return found;
}

async function provider(file, options, exportName) {
  const key = `${file}\n${exportName || ''}\n${JSON.stringify(options)}`;
  const stamp = fs.statSync(file).mtimeMs;
  const known = providers.get(key);
  if (known && known.stamp === stamp) return known.instance;
  const module = await loadModule(file);
  const main = exportName ? exported(module, exportName) : module.main;
  let instance;
  if (typeof main === 'function') {
    instance = new main(options);
  } else if (main && typeof main.callApi === 'function') {
    instance = main;
  } else {
    throw new Error(`${path.basename(file)} must export a provider class (with callApi), got ${typeof main}`);
  }
  providers.set(key, { stamp, instance });
  return instance;
}

const logger = Object.fromEntries(['debug', 'info', 'warn', 'error'].map((level) => [level, (...args) => console.error(...args)]));

// Markers ci-grade puts in arguments: a function returning a value (a provider's `id()`), and undefined.
function revive(value) {
  if (Array.isArray(value)) return value.map(revive);
  if (value === null || typeof value !== 'object') return value;
  if ('__cigrade_method__' in value) {
    const result = value.__cigrade_method__;
    return () => result;
  }
  if (value.__cigrade_undefined__ === true) return undefined;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, revive(item)]));
}

async function run(request) {
  const args = revive(request.args || []);
  if (request.provider) {
    const { file, options, export: exportName } = request.provider;
    stage = `loading ${path.basename(file)}`;
    const instance = await provider(file, options, exportName);
    if (typeof instance[request.method] !== 'function') {
      throw new Error(`the provider in ${path.basename(file)} has no method ${request.method}()`);
    }
    stage = `in ${request.method}()`;
    if (request.method === 'callApi' && args[1] && typeof args[1] === 'object') {
      args[1].logger = logger;
    }
    return await instance[request.method](...args);
  }
  stage = `importing ${path.basename(request.file)}`;
  if (request.data) {
    // a tests file may export its tests instead of a function that returns them
    const value = await loadExport(request.file, request.function);
    if (value !== undefined && typeof value !== 'function') return value;
  }
  const fn = await loadFunction(request.file, request.function);
  stage = `in ${request.function || fn.name || 'the default export'}()`;
  return await fn(...args);
}

function describe(err, file) {
  if (!(err instanceof Error)) return `Error: ${String(err)}`;
  const text = `${err.name}: ${err.message}`;
  if (!file || typeof err.stack !== 'string') return text;
  const url = pathToFileURL(file).href;
  for (const line of err.stack.split('\n').slice(1)) {
    const at = line.match(/^\s*at (?:(.*?) \()?(.*?):(\d+):\d+\)?$/);
    if (at && (at[2] === file || at[2].split('?')[0] === url)) {
      return `${text} (${path.basename(file)}:${at[3]}${at[1] ? ` in ${at[1].replace(/^(Object|async)\.?\s*/, '')}` : ''})`;
    }
  }
  return text;
}

async function handle(request) {
  if (request.env) {
    for (const key of Object.keys(process.env)) delete process.env[key];
    Object.assign(process.env, request.env);
  }
  if (request.cwd) process.chdir(request.cwd);
  const file = request.provider ? request.provider.file : request.file;
  let reply;
  try {
    const value = await run(request);
    reply = { value: value === undefined ? null : value };
  } catch (err) {
    reply = { error: describe(err, file) };
  }
  stage = null;
  try {
    send(reply);
  } catch (err) {
    const who = request.provider ? `${request.method}() in ${path.basename(file)}` : `${request.function || 'the default export'}() in ${path.basename(file)}`;
    send({ error: `${who} returned a value that is not JSON data: ${err.message}` });
  }
}

let buffer = Buffer.alloc(0);
let queue = Promise.resolve();
process.stdin.on('data', (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  while (buffer.length >= 4) {
    const length = buffer.readUInt32BE(0);
    if (buffer.length < 4 + length) break;
    const request = JSON.parse(buffer.subarray(4, 4 + length).toString('utf8'));
    buffer = buffer.subarray(4 + length);
    queue = queue.then(() => handle(request));
  }
});
process.stdin.on('end', () => queue.then(() => exit(0)));
