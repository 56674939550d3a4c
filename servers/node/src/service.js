// The protobench service, independent of protocol: the operations of
// contract/README.md, the dataset loaded once at start-up, the injected
// service time and the failure draw.
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeMessage } from './jsoncodec.js';
import { invalid, notFound, injected } from './errors.js';

const MASK64 = (1n << 64n) - 1n;
const TWO64 = 18446744073709551616;

export function splitmix64(x) {
  let z = (x + 0x9E3779B97F4A7C15n) & MASK64;
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & MASK64;
  return z ^ (z >> 31n);
}

// Request k fails when splitmix64(seed + k) / 2^64 < rate. One counter per
// process (node is single-threaded, so increments are trivially atomic).
export class FailureDraw {
  constructor(rate, seed) {
    this.rate = rate;
    this.seed = seed;
    this.k = 0n;
  }

  fails() {
    const k = this.k;
    this.k = k + 1n;
    if (this.rate <= 0) return false;
    if (this.rate >= 1) return true;
    return Number(splitmix64((this.seed + k) & MASK64)) / TWO64 < this.rate;
  }
}

export function makeFile(size) {
  const buf = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) buf[i] = (i * 131 + 7) % 251;
  return buf;
}

// Reverse a string by Unicode scalar values (surrogate pairs kept together).
export function reverseScalars(s) {
  const n = s.length;
  const out = new Uint16Array(n);
  let j = n;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out[j - 2] = c;
        out[j - 1] = d;
        j -= 2;
        i++;
        continue;
      }
    }
    out[--j] = c;
  }
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength).toString('utf16le');
}

const CLONE_MAX_TIMES = 100000;
const CLONE_MAX_BYTES = 64 * 1024 * 1024;

// op name -> {request, response, rest: [method, path]}
export const OPERATIONS = {
  GetInventoryXs: { request: 'protobench.v1.Empty', response: 'protobench.v1.Empty', rest: ['GET', '/v1/inventory/xs'] },
  GetInventoryS: { request: 'protobench.v1.Empty', response: 'protobench.v1.InventoryStatus', rest: ['GET', '/v1/inventory/s'] },
  GetInventoryM: { request: 'protobench.v1.Empty', response: 'protobench.v1.DeviceList', rest: ['GET', '/v1/inventory/m'] },
  GetInventoryL: { request: 'protobench.v1.Empty', response: 'protobench.v1.ItemList', rest: ['GET', '/v1/inventory/l'] },
  EchoProduct: { request: 'protobench.v1.Product', response: 'protobench.v1.Product', rest: ['POST', '/v1/products/echo'] },
  ModifyProduct: { request: 'protobench.v1.Product', response: 'protobench.v1.Product', rest: ['POST', '/v1/products/modify'] },
  CloneText: { request: 'protobench.v1.CloneRequest', response: 'protobench.v1.CloneResponse', rest: ['POST', '/v1/tasks/clone'] },
  GetInteger: { request: 'protobench.v1.Empty', response: 'protobench.v1.IntegerValue', rest: ['GET', '/v1/tasks/integer'] },
  GetIntegers: { request: 'protobench.v1.Empty', response: 'protobench.v1.IntegerList', rest: ['GET', '/v1/tasks/integers'] },
  GetObjects: { request: 'protobench.v1.Empty', response: 'protobench.v1.ObjectList', rest: ['GET', '/v1/tasks/objects'] },
  GetFile: { request: 'protobench.v1.FileRequest', response: 'protobench.v1.FileContent', rest: ['GET', '/v1/tasks/files/:name'] },
  Echo: { request: 'protobench.v1.EchoMessage', response: 'protobench.v1.EchoMessage', rest: ['POST', '/v1/echo'] },
  SayHello: { request: 'helloworld.HelloRequest', response: 'helloworld.HelloReply', rest: ['POST', '/v1/greeter/hello'], grpcService: 'helloworld.Greeter' },
};

export function loadDataset(model, file) {
  const raw = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const key of ['inventoryStatus', 'devices', 'items', 'people']) {
    if (!(key in raw)) throw new Error(`${file}: missing member ${key}`);
  }
  // Decoded with the same strict proto3-JSON decoder as requests, into the
  // native objects every protocol serializes from.
  const list = (type, arr, name) => {
    if (!Array.isArray(arr)) throw new Error(`${file}: ${name} is not an array`);
    return arr.map((v, i) => decodeMessage(model.get(type), v, `${name}[${i}]`));
  };
  return {
    inventoryStatus: decodeMessage(model.get('protobench.v1.InventoryStatus'), raw.inventoryStatus, 'inventoryStatus'),
    devices: list('protobench.v1.Device', raw.devices, 'devices'),
    items: list('protobench.v1.Item', raw.items, 'items'),
    people: list('protobench.v1.Person', raw.people, 'people'),
  };
}

export class Service {
  constructor(config, model) {
    this.config = config;
    this.model = model;
    this.data = loadDataset(model, config.datasetPath);
    this.files = new Map([['file-455k', makeFile(455000)], ['file-3m4', makeFile(3400000)]]);
    this.integers = Array.from({ length: 10000 }, (_, i) => i);
    this.draw = new FailureDraw(config.failureRate, config.failureSeed);
    const st = config.serviceTime;
    this.delay = null;
    if (st && st.mode === 'sleep') this.delay = () => sleep(st.ms);
    if (st && st.mode === 'spin') {
      const ns = BigInt(Math.round(st.ms * 1e6));
      this.delay = () => {
        const end = process.hrtime.bigint() + ns;
        while (process.hrtime.bigint() < end) { /* burn CPU on this thread */ }
        return null;
      };
    }
    const d = this.data;
    const files = this.files;
    const integers = this.integers;
    // validate(req) runs before the service time and the failure draw;
    // handle(req) builds the response object.
    this.ops = {
      GetInventoryXs: { handle: () => ({}) },
      GetInventoryS: { handle: () => d.inventoryStatus },
      GetInventoryM: { handle: () => ({ devices: d.devices }) },
      GetInventoryL: { handle: () => ({ items: d.items }) },
      EchoProduct: { handle: (p) => p },
      ModifyProduct: {
        handle: (p) => ({ id: p.id, name: p.name, description: reverseScalars(p.description), price: p.price, stock: p.stock, tags: p.tags }),
      },
      CloneText: {
        validate: (r) => {
          if (!Number.isInteger(r.times) || r.times < 0 || r.times > CLONE_MAX_TIMES) throw invalid(`times must be in 0..${CLONE_MAX_TIMES}`);
          if (r.times > 0 && Buffer.byteLength(r.text, 'utf8') * r.times > CLONE_MAX_BYTES) throw invalid('response would exceed 64 MiB of text');
        },
        handle: (r) => ({ texts: new Array(r.times).fill(r.text) }),
      },
      GetInteger: { handle: () => ({ value: 2147483647 }) },
      GetIntegers: { handle: () => ({ values: integers }) },
      GetObjects: { handle: () => ({ people: d.people }) },
      GetFile: {
        validate: (r) => { if (!files.has(r.name)) throw notFound(`unknown file ${JSON.stringify(String(r.name).slice(0, 64))}`); },
        handle: (r) => ({ name: r.name, content: files.get(r.name) }),
      },
      Echo: { handle: (m) => m },
      SayHello: { handle: (r) => ({ response: r.request }) },
    };
    for (const name of Object.keys(OPERATIONS)) {
      if (!this.ops[name]) throw new Error(`operation ${name} not implemented`);
    }
  }

  // Runs an operation on a decoded request: validate, service time, failure
  // draw, handle. Returns the response object or a Promise of it; throws (or
  // rejects with) an ApiError.
  invoke(op, req) {
    const o = this.ops[op];
    if (o.validate) o.validate(req);
    if (this.delay) {
      const p = this.delay();
      if (p) return p.then(() => this.finish(o, req));
    }
    return this.finish(o, req);
  }

  finish(o, req) {
    if (this.draw.fails()) throw injected();
    return o.handle(req);
  }

  // Admits a streaming call whose request (if any) is already validated:
  // the injected service time, then the failure draw, once per stream.
  // Returns nothing or a Promise; throws (or rejects with) the injected
  // failure.
  admit() {
    if (this.delay) {
      const p = this.delay();
      if (p) return p.then(() => this.drawOnce());
    }
    return this.drawOnce();
  }

  drawOnce() {
    if (this.draw.fails()) throw injected();
  }
}
