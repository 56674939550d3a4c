// The contract's XML form (contract/README.md "XML (SOAP 1.1,
// document/literal)") on top of node-soap's object model.
//
// decodeXmlObject: node-soap's xmlToObject gives, for a body element, an
// object keyed by child element local names whose leaves are text (numeric
// and boolean types are kept as raw text by our customDeserializer, strings
// keep their whitespace), arrays for maxOccurs="unbounded" elements and null
// for empty elements. This checks it strictly against the message and turns
// it into the native object (unknown or repeated elements, bad values ->
// invalid input = soap:Client).
//
// prepareForXml: the native response object as node-soap's objectToXML wants
// it: bytes as base64 text, and strings that node-soap's xmlEscape would pass
// through unescaped (it treats "<![CDATA[...]]>" as preformatted XML) given as
// already-escaped text, so every string round-trips unchanged.
import { invalid } from './errors.js';
import { defaultFor } from './model.js';

const INT = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
const FLOAT_MAX = 3.4028234663852886e38;
const ATTRIBUTES_KEY = 'attributes';

function text(v, where) {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null || v === undefined) throw invalid(`${where}: empty element`);
  throw invalid(`${where}: expected a value, got child elements or attributes`);
}

function scalar(f, v, where) {
  switch (f.kind) {
    case 'int32': case 'uint32': {
      const s = text(v, where).trim();
      const n = Number(s);
      const [min, max] = f.kind === 'int32' ? [-2147483648, 2147483647] : [0, 4294967295];
      if (!INT.test(s) || n < min || n > max) throw invalid(`${where}: not an integer in ${min}..${max}`);
      return n;
    }
    case 'int64': case 'uint64': {
      const s = text(v, where).trim();
      if (!INT.test(s)) throw invalid(`${where}: not an integer`);
      const b = BigInt(s);
      if (b < (f.kind === 'int64' ? INT64_MIN : 0n) || b > (f.kind === 'int64' ? INT64_MAX : (1n << 64n) - 1n)) throw invalid(`${where}: out of range`);
      return b.toString();
    }
    case 'double': case 'float': {
      const s = text(v, where).trim();
      const n = Number(s);
      if (!DECIMAL.test(s) || !Number.isFinite(n) || (f.float32 && Math.abs(n) > FLOAT_MAX)) throw invalid(`${where}: not a finite number`);
      return n;
    }
    case 'bool': {
      const s = text(v, where).trim();
      if (s === 'true' || s === '1') return true;
      if (s === 'false' || s === '0') return false;
      throw invalid(`${where}: not a boolean`);
    }
    case 'string':
      if (v === null) return ''; // <e/>
      return text(v, where);
    case 'bytes': {
      if (v === null) return Buffer.alloc(0);
      const s = text(v, where).replace(/[ \t\r\n]+/g, '');
      if (!BASE64.test(s) || s.length % 4 !== 0) throw invalid(`${where}: not base64`);
      return Buffer.from(s, 'base64');
    }
    case 'enum': {
      const s = text(v, where).trim();
      if (!Object.prototype.hasOwnProperty.call(f.enumValues, s)) throw invalid(`${where}: unknown enum value`);
      return s;
    }
    case 'message':
      return decodeXmlObject(f.message, v, where);
    default:
      throw new Error(`unhandled kind ${f.kind}`);
  }
}

export function decodeXmlObject(info, obj, where) {
  if (obj === null || obj === undefined || obj === '') obj = {}; // empty element: every field at its default
  if (typeof obj !== 'object' || Array.isArray(obj)) throw invalid(`${where}: expected child elements`);
  const values = new Array(info.fields.length);
  for (const key of Object.keys(obj)) {
    if (key === ATTRIBUTES_KEY) continue; // xmlns:* are not kept; other attributes are ignored
    const f = info.byName.get(key);
    if (f === undefined || f.name !== key) throw invalid(`${where}/${key.slice(0, 64)}: unknown element`);
    values[f.index] = obj[key];
  }
  const out = {};
  let oneofSet = null;
  for (const f of info.fields) {
    const v = values[f.index];
    const path = `${where}/${f.name}`;
    if (v === undefined) {
      if (!f.presence) out[f.name] = f.kind === 'message' && !f.repeated ? decodeXmlObject(f.message, {}, path) : defaultFor(f);
      continue;
    }
    if (f.repeated) {
      const arr = Array.isArray(v) ? v : [v];
      out[f.name] = arr.map((e, i) => scalar(f, e, `${path}[${i + 1}]`));
      continue;
    }
    if (Array.isArray(v)) throw invalid(`${path}: element given more than once`);
    if (f.oneof) {
      if (oneofSet && oneofSet.has(f.oneof)) throw invalid(`${path}: more than one member of oneof ${f.oneof}`);
      (oneofSet ??= new Set()).add(f.oneof);
    }
    out[f.name] = scalar(f, v, path);
  }
  return out;
}

const CDATA_OPEN = '<![CDATA[';

function escapeText(s) {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
    .replace(/\t/g, '&#x9;').replace(/\r/g, '&#xD;').replace(/\n/g, '&#xA;');
}

// Copy-on-write walk; returns obj itself when nothing needs changing.
export function prepareForXml(info, obj) {
  if (obj === null || obj === undefined) return obj;
  let out = obj;
  for (const f of info.fields) {
    const v = obj[f.name];
    if (v === undefined || v === null) continue;
    let nv = v;
    if (f.kind === 'bytes') {
      nv = f.repeated ? v.map((b) => Buffer.from(b).toString('base64')) : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
    } else if (f.kind === 'string') {
      if (f.repeated) {
        if (v.some((s) => s.startsWith(CDATA_OPEN))) nv = v.map((s) => (s.startsWith(CDATA_OPEN) ? { $xml: escapeText(s) } : s));
      } else if (v.startsWith(CDATA_OPEN)) {
        nv = { $xml: escapeText(v) };
      }
    } else if (f.kind === 'message') {
      if (f.repeated) {
        let arr = v;
        for (let i = 0; i < v.length; i++) {
          const m = prepareForXml(f.message, v[i]);
          if (m !== v[i]) {
            if (arr === v) arr = v.slice();
            arr[i] = m;
          }
        }
        nv = arr;
      } else {
        nv = prepareForXml(f.message, v);
      }
    }
    if (nv !== v) {
      if (out === obj) out = { ...obj };
      out[f.name] = nv;
    }
  }
  return out;
}
