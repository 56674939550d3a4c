// Configuration: read ONLY from the PROTOBENCH_* environment variables of
// contract/README.md ("The server environment contract").
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '..', '..', '..');
export const protoDir = path.join(repoRoot, 'contract', 'proto');
export const wsdlDir = path.join(repoRoot, 'contract', 'wsdl');

export class ConfigError extends Error {}

const U64_MAX = (1n << 64n) - 1n;

// host:port -> {host, port}; IPv6 hosts are written [::1]:port.
export function parseAddr(name, value) {
  const m = /^(?:\[([^\]]+)\]|([^:\[\]]*)):(\d{1,5})$/.exec(value);
  if (!m) throw new ConfigError(`${name}: expected host:port, got ${JSON.stringify(value)}`);
  const host = m[1] ?? m[2];
  const port = Number(m[3]);
  if (host === '' || port > 65535) throw new ConfigError(`${name}: invalid address ${JSON.stringify(value)}`);
  return { host, port, ipv6: m[1] !== undefined };
}

export function formatAddr(host, port) {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

const UNITS = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000 };

// "sleep:50ms" / "spin:200us" -> {mode, ms}
export function parseServiceTime(value) {
  if (value === undefined || value === '' || value === 'none') return null;
  const m = /^(sleep|spin):(\d+(?:\.\d+)?)(ns|us|µs|ms|s)$/.exec(value.trim());
  if (!m) throw new ConfigError(`PROTOBENCH_SERVICE_TIME: expected sleep:<duration> or spin:<duration>, got ${JSON.stringify(value)}`);
  const ms = Number(m[2]) * UNITS[m[3]];
  return ms > 0 ? { mode: m[1], ms } : null;
}

// PROTOBENCH_IDLE_TIMEOUT / PROTOBENCH_READ_TIMEOUT: an integer followed by
// ns, us, ms or s, > 0 -> milliseconds (Node's timers count whole
// milliseconds, so anything shorter becomes 1 ms).
export function parseTimeout(name, value, defMs) {
  if (value === undefined || value === '') return defMs;
  const m = /^(\d+)(ns|us|ms|s)$/.exec(value.trim());
  const ms = m ? Number(m[1]) * UNITS[m[2]] : NaN;
  if (!(ms > 0) || ms > 2 ** 31 - 1) {
    throw new ConfigError(`${name}: expected a positive integer followed by ns, us, ms or s (e.g. 60s), at most 2147483647ms, got ${JSON.stringify(value)}`);
  }
  return Math.max(1, Math.ceil(ms));
}

function parseIntEnv(name, value, def, min, max) {
  if (value === undefined || value === '') return def;
  if (!/^\d+$/.test(value.trim())) throw new ConfigError(`${name}: expected an integer, got ${JSON.stringify(value)}`);
  const n = Number(value.trim());
  if (n < min || n > max) throw new ConfigError(`${name}: ${n} out of range ${min}..${max}`);
  return n;
}

export function loadConfig(env = process.env) {
  const addrs = {};
  for (const [proto, key] of [['rest', 'PROTOBENCH_REST_ADDR'], ['rest-h2', 'PROTOBENCH_REST_H2_ADDR'],
    ['grpc', 'PROTOBENCH_GRPC_ADDR'], ['soap', 'PROTOBENCH_SOAP_ADDR'], ['graphql', 'PROTOBENCH_GRAPHQL_ADDR'],
    ['graphql-get', 'PROTOBENCH_GRAPHQL_GET_ADDR'],
    ['connect', 'PROTOBENCH_CONNECT_ADDR'], ['connect-json', 'PROTOBENCH_CONNECT_JSON_ADDR'],
    // not PROTOBENCH_GRPC_WEB_TEXT_ADDR: connect-es does not serve gRPC-Web's text form (README)
    ['grpc-web', 'PROTOBENCH_GRPC_WEB_ADDR']]) {
    if (env[key] !== undefined && env[key] !== '') addrs[proto] = parseAddr(key, env[key]);
  }

  const workers = parseIntEnv('PROTOBENCH_WORKERS', env.PROTOBENCH_WORKERS, availableParallelism(), 1, 1024);

  let tls = null;
  const certPath = env.PROTOBENCH_TLS_CERT;
  const keyPath = env.PROTOBENCH_TLS_KEY;
  if (certPath && keyPath) {
    tls = { cert: fs.readFileSync(certPath), key: fs.readFileSync(keyPath) };
  } else if (certPath || keyPath) {
    throw new ConfigError('PROTOBENCH_TLS_CERT and PROTOBENCH_TLS_KEY must be set together');
  }

  let failureRate = 0;
  if (env.PROTOBENCH_FAILURE_RATE !== undefined && env.PROTOBENCH_FAILURE_RATE !== '') {
    const s = env.PROTOBENCH_FAILURE_RATE.trim();
    failureRate = /^(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(s) ? Number(s) : NaN;
    if (!(failureRate >= 0 && failureRate <= 1)) throw new ConfigError(`PROTOBENCH_FAILURE_RATE: expected 0..1, got ${JSON.stringify(env.PROTOBENCH_FAILURE_RATE)}`);
  }

  let failureSeed = 1n;
  if (env.PROTOBENCH_FAILURE_SEED !== undefined && env.PROTOBENCH_FAILURE_SEED !== '') {
    const s = env.PROTOBENCH_FAILURE_SEED.trim();
    if (!/^\d+$/.test(s) || BigInt(s) > U64_MAX) throw new ConfigError(`PROTOBENCH_FAILURE_SEED: expected an unsigned 64-bit integer, got ${JSON.stringify(s)}`);
    failureSeed = BigInt(s);
  }

  const serviceTime = parseServiceTime(env.PROTOBENCH_SERVICE_TIME);
  const maxRequestBytes = parseIntEnv('PROTOBENCH_MAX_REQUEST_BYTES', env.PROTOBENCH_MAX_REQUEST_BYTES, 8388608, 1, 2 ** 31 - 1);
  const datasetPath = env.PROTOBENCH_DATASET || path.join(repoRoot, 'contract', 'data', 'dataset.json');

  const idleTimeoutMs = parseTimeout('PROTOBENCH_IDLE_TIMEOUT', env.PROTOBENCH_IDLE_TIMEOUT, 60000);
  const readTimeoutMs = parseTimeout('PROTOBENCH_READ_TIMEOUT', env.PROTOBENCH_READ_TIMEOUT, 30000);
  const maxStreams = parseIntEnv('PROTOBENCH_MAX_STREAMS', env.PROTOBENCH_MAX_STREAMS, 1000, 1, 2 ** 32 - 1);

  return { addrs, workers, tls, failureRate, failureSeed, serviceTime, maxRequestBytes, datasetPath, idleTimeoutMs, readTimeoutMs, maxStreams };
}
