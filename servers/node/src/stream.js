// The streaming operations of contract/README.md ("Streaming"), independent
// of transport: their limits, the feed (events built one at a time, never
// sent before their scheduled time and stamped with it), the upload tally,
// the polling page, the query form of SSE and polling, and the protobuf /
// JSON codecs of the messages (shared by gRPC and WebSocket).
import { setTimeout as sleep, setImmediate as yieldToLoop } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { invalid } from './errors.js';
import { decodeMessage } from './jsoncodec.js';
import { checkWire, WireError } from './pbcheck.js';

export const MAX_COUNT = 1000000;
export const MAX_ITEMS = 1395;
export const MAX_RATE = 1000000;
export const MAX_PAGE_EVENTS = 1000;
export const MAX_PAGE_ITEMS = 16384;
export const MAX_STREAM_MESSAGES = 1000000;
export const TOO_MANY_MESSAGES = `more than ${MAX_STREAM_MESSAGES} messages on one stream`;

function validateFeed(r) {
  if (!(r.count >= 1 && r.count <= MAX_COUNT)) throw invalid(`count is ${r.count}, expected 1..=${MAX_COUNT}`);
  if (r.items > MAX_ITEMS) throw invalid(`items is ${r.items}, expected 0..=${MAX_ITEMS}`);
  if (r.rate > MAX_RATE) throw invalid(`rate is ${r.rate}, expected 0 (as fast as possible) ..=${MAX_RATE}`);
}

export function validateSubscribe(r) {
  validateFeed(r);
}

export function validatePoll(r) {
  validateFeed(r);
  if (!(r.max >= 1 && r.max <= MAX_PAGE_EVENTS)) throw invalid(`max is ${r.max}, expected 1..=${MAX_PAGE_EVENTS}`);
  if (r.after > r.count) throw invalid(`after is ${r.after}, beyond the feed's count ${r.count}`);
  const start = BigInt(r.startNs);
  if (start < 0n || (r.rate > 0 && start === 0n)) {
    throw invalid(`startNs is ${r.startNs}, expected the feed's start in ns since the Unix epoch (> 0 when rate > 0)`);
  }
}

// floor((seq - 1) * 1e9 / rate) ns after the feed's start; 0 at rate 0.
export function offsetNs(seq, rate) {
  if (rate === 0 || seq === 0) return 0n;
  return (BigInt(seq - 1) * 1000000000n) / BigInt(rate);
}

// The wall clock in ns since the Unix epoch. Node has no nanosecond
// CLOCK_REALTIME call: performance.timeOrigin (the wall clock at start-up,
// in microseconds) plus the monotonic clock since then.
export function nowNs() {
  const ms = performance.timeOrigin + performance.now();
  const whole = Math.floor(ms);
  return BigInt(whole) * 1000000n + BigInt(Math.round((ms - whole) * 1e6));
}

// Resolves no earlier than the monotonic time `hr` (process.hrtime.bigint()).
// Node's timers count whole milliseconds from a cached loop time and may fire
// a little early, so the time is checked again after each wait.
async function sleepUntil(hr) {
  for (;;) {
    const left = hr - process.hrtime.bigint();
    if (left <= 0n) return;
    if (left >= 1000000n) await sleep(Number(left / 1000000n));
    else await yieldToLoop();
  }
}

// Event `seq` of a feed of `items` items per event: the dataset's items
// ((seq - 1) * items + j) mod 1395, built now.
export function feedEvent(data, seq, items, scheduledNs) {
  const all = data.items;
  const first = (seq - 1) * items;
  const list = new Array(items);
  for (let j = 0; j < items; j++) list[j] = all[(first + j) % all.length];
  return { seq, scheduledNs: String(scheduledNs), items: list };
}

// The events of one subscription still to send, from the one after `after`.
// The schedule is anchored once, when the stream starts: the monotonic clock
// for waiting, the wall clock for the stamps.
export class Feed {
  constructor(data, request, after = 0) {
    this.data = data;
    this.request = request;
    this.baseHr = process.hrtime.bigint();
    this.baseNs = nowNs();
    // a resumed feed's first event is due at once
    this.skew = offsetNs(after + 1, request.rate);
    this.next = after + 1;
  }

  get count() { return this.request.count; }

  // The next event once it is due, or null after the last.
  async nextEvent() {
    const { count, items, rate } = this.request;
    if (this.next > count) return null;
    const seq = this.next++;
    let stamp;
    if (rate === 0) {
      stamp = nowNs();
    } else {
      const offset = offsetNs(seq, rate) - this.skew;
      await sleepUntil(this.baseHr + offset);
      stamp = this.baseNs + offset;
    }
    return feedEvent(this.data, seq, items, stamp);
  }
}

// The page a poll gets at `now` (ns): the events after `after` that are due
// (every one at rate 0, stamped now), at most `max` and at most
// MAX_PAGE_ITEMS items (but at least one due event).
export function pollPage(data, r, now) {
  validatePoll(r);
  const byItems = r.items === 0 ? Infinity : Math.max(1, Math.floor(MAX_PAGE_ITEMS / r.items));
  const last = Math.min(r.count, r.after + Math.min(r.max, byItems));
  const start = BigInt(r.startNs);
  const events = [];
  for (let seq = r.after + 1; seq <= last; seq++) {
    let stamp = now;
    if (r.rate > 0) {
      stamp = start + offsetNs(seq, r.rate);
      if (stamp > now) break;
    }
    events.push(feedEvent(data, seq, r.items, stamp));
  }
  const done = (events.length > 0 && events[events.length - 1].seq === r.count) || r.after === r.count;
  return { events, done };
}

// An upload's running summary: count, UTF-8 bytes of the payloads, 32-bit
// FNV-1a over the payloads concatenated.
export class Tally {
  constructor() {
    this.count = 0;
    this.bytes = 0;
    this.checksum = 0x811c9dc5;
  }

  add(message) {
    if (this.count >= MAX_STREAM_MESSAGES) return false;
    this.count++;
    const b = Buffer.from(message.payload, 'utf8');
    this.bytes += b.length;
    let h = this.checksum;
    for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 0x01000193);
    this.checksum = h >>> 0;
    return true;
  }

  summary() {
    return { count: this.count, bytes: String(this.bytes), checksum: this.checksum };
  }
}

// The query form of SSE and polling: each field by its JSON name, a decimal
// integer; a missing one is 0; unknown, repeated or non-integer ones are
// errors naming the parameter.
function parseQuery(query, names) {
  const values = new Array(names.length).fill(undefined);
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    const value = eq < 0 ? '' : pair.slice(eq + 1);
    const i = names.indexOf(name);
    if (i < 0) throw invalid(`unknown query parameter ${JSON.stringify(name.slice(0, 40))}; expected ${names.join(', ')}`);
    if (values[i] !== undefined) throw invalid(`query parameter ${name} is given twice`);
    if (!/^\d{1,20}$/.test(value)) {
      throw invalid(`query parameter ${name} is ${JSON.stringify(value.slice(0, 40))}, expected a non-negative decimal integer`);
    }
    values[i] = BigInt(value);
  }
  return values;
}

function u32(name, v) {
  const n = v ?? 0n;
  if (n > 0xffffffffn) throw invalid(`${name} is ${n}, too large`);
  return Number(n);
}

function queryOf(url) {
  const q = url.indexOf('?');
  return q < 0 ? '' : url.slice(q + 1);
}

// `GET /v1/stream/sse?count=N&items=K&rate=R` -> a validated SubscribeRequest.
export function subscribeFromUrl(url) {
  const v = parseQuery(queryOf(url), ['count', 'items', 'rate']);
  const r = { count: u32('count', v[0]), items: u32('items', v[1]), rate: u32('rate', v[2]) };
  validateSubscribe(r);
  return r;
}

// `GET /v1/stream/poll?count=&items=&rate=&startNs=&after=&max=` -> a
// validated PollRequest.
export function pollFromUrl(url) {
  const v = parseQuery(queryOf(url), ['count', 'items', 'rate', 'startNs', 'after', 'max']);
  const startNs = v[3] ?? 0n;
  if (startNs > (1n << 63n) - 1n) throw invalid(`startNs is ${startNs}, too large`);
  const r = {
    count: u32('count', v[0]), items: u32('items', v[1]), rate: u32('rate', v[2]),
    startNs: String(startNs), after: u32('after', v[4]), max: u32('max', v[5]),
  };
  validatePoll(r);
  return r;
}

// Protobuf and JSON codecs of the streaming messages, from the service
// definition @grpc/proto-loader builds (the same one the gRPC server
// serves). decode* throw an ApiError('invalid') naming the problem.
export function streamCodecs(model, packageDefinition) {
  const methods = packageDefinition['protobench.v1.Streams'];
  const codec = (type, serialize, deserialize) => {
    const info = model.get(type);
    return {
      info,
      encodePb: serialize,
      encodeJson: (obj) => JSON.stringify(obj),
      decodePb(buf) {
        try {
          checkWire(info, buf);
          return deserialize(buf);
        } catch (e) {
          const why = e instanceof WireError ? e.message : 'invalid protobuf encoding';
          throw invalid(`undecodable ${type} message: ${why}`);
        }
      },
      decodeJson(buf) {
        let obj;
        try {
          obj = JSON.parse(buf.toString('utf8'));
        } catch (e) {
          throw invalid(`malformed JSON ${type} message: ${e.message}`);
        }
        return decodeMessage(info, obj);
      },
    };
  };
  const m = (name) => methods[name];
  return {
    StreamMessage: codec('protobench.v1.StreamMessage', m('EchoStream').responseSerialize, m('EchoStream').requestDeserialize),
    SubscribeRequest: codec('protobench.v1.SubscribeRequest', null, m('Subscribe').requestDeserialize),
    FeedEvent: codec('protobench.v1.FeedEvent', m('Subscribe').responseSerialize, null),
    UploadSummary: codec('protobench.v1.UploadSummary', m('Upload').responseSerialize, null),
  };
}
