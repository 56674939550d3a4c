// SOAP 1.1 document/literal at POST /soap, WSDL at GET /soap?wsdl.
//
// node-soap (the `soap` package) provides the WSDL model (contract/wsdl/
// protobench.wsdl, parsed at start-up), the request parser (WSDL.xmlToObject,
// sax in strict mode) and the schema-driven response serializer
// (WSDL.objectToDocumentXML). Its HTTP front end (soap.Server) is not used,
// because its output is not contract-conformant (see README "Notable
// points"): it dispatches on SOAPAction before the body element, trims
// whitespace from every string, answers malformed XML with faultcode "500"
// plus a WS-Security timestamp header, and answers an unknown body element
// with a stack trace as text/plain. The HTTP layer is fastify, like REST.
import fs from 'node:fs';
import { isUtf8 } from 'node:buffer';
import path from 'node:path';
import Fastify from 'fastify';
import soap from 'soap';
import { wsdlDir } from './config.js';
import { OPERATIONS } from './service.js';
import { ApiError, invalid } from './errors.js';
import { fastifyServerOptions, limitFastify } from './rest.js';
import { decodeXmlObject, prepareForXml } from './xmlcodec.js';

const SOAP_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';
const XML_CONTENT_TYPE = 'text/xml; charset=utf-8';
const raw = (text) => text; // keep numeric/boolean text for our strict checks

function loadWsdl(file) {
  const xml = fs.readFileSync(file, 'utf8');
  return new Promise((resolve, reject) => {
    const wsdl = new soap.WSDL(xml, file, {
      returnFault: true, // unknown body elements become parse errors, not crashes
      customDeserializer: { int: raw, long: raw, short: raw, integer: raw, double: raw, float: raw, decimal: raw, boolean: raw, base64Binary: raw },
    });
    wsdl.onReady((err) => {
      if (err) return reject(err);
      // what soap.Client does for its preserveWhitespace option: keep string
      // values exactly as sent (soap.Server has no such option)
      wsdl.options.preserveWhitespace = true;
      wsdl.options.attributesKey = 'attributes';
      resolve({ wsdl, xml });
    });
  });
}

// Refuse any DTD: look at the prolog (BOM, XML declaration, processing
// instructions, comments, whitespace) for <!DOCTYPE. sax (strict) itself
// rejects a DOCTYPE after the root element has started and never expands
// entities, but it does accept a DOCTYPE in the prolog.
export function hasDoctype(xml) {
  let i = xml.charCodeAt(0) === 0xfeff ? 1 : 0;
  const n = xml.length;
  for (;;) {
    while (i < n && (xml[i] === ' ' || xml[i] === '\t' || xml[i] === '\r' || xml[i] === '\n')) i++;
    if (xml.startsWith('<?', i)) {
      const e = xml.indexOf('?>', i + 2);
      if (e < 0) return false; // malformed; the parser rejects it
      i = e + 2;
    } else if (xml.startsWith('<!--', i)) {
      const e = xml.indexOf('-->', i + 4);
      if (e < 0) return false;
      i = e + 3;
    } else {
      return xml.length - i >= 9 && xml.slice(i, i + 9).toUpperCase() === '<!DOCTYPE';
    }
  }
}

// The most XML elements a SOAP request may have (the whole envelope
// counted); the largest legitimate contract request has fewer than 40.
export const MAX_ELEMENTS = 10000;

// Whether the document has more than `max` elements, found by a scan of the
// raw text before node-soap parses anything (node-soap builds the whole
// object tree first, ~10x the document's size in memory): every `<` that
// starts a tag other than an end tag, comment, CDATA section, processing
// instruction or declaration is an element (`<` cannot occur in attribute
// values or text). Malformed documents are left to the parser.
export function hasMoreElements(xml, max) {
  let n = 0;
  let i = xml.indexOf('<');
  while (i >= 0) {
    const c = xml.charCodeAt(i + 1);
    let next = i + 1;
    if (c === 0x2f /* / */) {
      // end tag
    } else if (c === 0x3f /* ? */) {
      next = xml.indexOf('?>', i + 2);
    } else if (c === 0x21 /* ! */) {
      if (xml.startsWith('<!--', i)) next = xml.indexOf('-->', i + 4);
      else if (xml.startsWith('<![CDATA[', i)) next = xml.indexOf(']]>', i + 9);
    } else if (++n > max) {
      return true;
    }
    if (next < 0) return false;
    i = xml.indexOf('<', next);
  }
  return false;
}

const escapeXml = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export async function buildSoap(config, model, service) {
  const { wsdl, xml: wsdlText } = await loadWsdl(path.join(wsdlDir, 'protobench.wsdl'));

  // <Op>Request element -> op; checked against the WSDL's binding.
  const services = wsdl.definitions.services;
  const port = Object.values(Object.values(services)[0].ports)[0];
  const binding = port.binding;
  const byElement = new Map();
  for (const [op, def] of Object.entries(OPERATIONS)) {
    const m = binding.methods[op];
    const top = binding.topElements[`${op}Request`];
    if (!m || !m.output || !top || top.methodName !== op || top.outputName !== `${op}Response`) {
      throw new Error(`WSDL: operation ${op} with ${op}Request/${op}Response not found`);
    }
    byElement.set(`${op}Request`, {
      op,
      request: model.get(def.request),
      response: model.get(def.response),
      outputName: top.outputName,
      nsAlias: m.output.targetNSAlias,
      ns: m.output.targetNamespace,
    });
  }

  // The contract's WSDL names a placeholder address; a stock client calls
  // whatever soap:address says, so it is rewritten to the host the client
  // used (the Host header) and this listener's scheme.
  const LOCATION = '<soap:address location="';
  const at = wsdlText.indexOf(LOCATION);
  const end = at < 0 ? -1 : wsdlText.indexOf('"', at + LOCATION.length);
  if (at < 0 || end < 0 || wsdlText.indexOf(LOCATION, end) >= 0) {
    throw new Error('WSDL: expected exactly one soap:address location');
  }
  const scheme = config.tls ? 'https' : 'http';
  const servedWsdl = (host) => {
    const h = typeof host === 'string' && host.length > 0 ? host : 'localhost';
    const quoted = h.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
    return `${wsdlText.slice(0, at + LOCATION.length)}${scheme}://${quoted}/soap${wsdlText.slice(end)}`;
  };

  const envelope = (body) => `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${SOAP_ENV}"><soap:Body>${body}</soap:Body></soap:Envelope>`;
  const fault = (code, message) => envelope(`<soap:Fault><faultcode>soap:${code}</faultcode><faultstring>${escapeXml(message)}</faultstring></soap:Fault>`);
  const sendFault = (reply, code, message) => reply.code(500).type(XML_CONTENT_TYPE).send(fault(code, message));

  const textError = (_status, message) => ({ type: 'text/plain; charset=utf-8', body: message });
  const app = limitFastify(Fastify(fastifyServerOptions(config, { http2: false, format: textError })), config, { http2: false });
  app.removeAllContentTypeParsers();
  // text/xml (any charset parameter) read as a string, limited to
  // PROTOBENCH_MAX_REQUEST_BYTES (413 before parsing); other types get 415.
  // The body must be UTF-8 (the only encoding accepted): an invalid byte
  // sequence is malformed XML, not something to replace with U+FFFD.
  app.addContentTypeParser('text/xml', { parseAs: 'buffer' }, (_req, body, done) => {
    if (!isUtf8(body)) return done(invalid('malformed XML: invalid UTF-8'));
    return done(null, body.toString('utf8'));
  });

  app.setErrorHandler((err, _request, reply) => {
    if (err instanceof ApiError) return sendFault(reply, err.kind === 'injected' ? 'Server' : 'Client', err.message);
    const status = err.statusCode;
    if (status === 413 || status === 415) return reply.code(status).type('text/plain; charset=utf-8').send(err.message);
    if (Number.isInteger(status) && status >= 400 && status < 500) return sendFault(reply, 'Client', err.message);
    return sendFault(reply, 'Server', 'internal error');
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).type('text/plain; charset=utf-8').send('not found'));

  const notAllowed = (reply) => reply.code(405).header('allow', 'POST, GET').type('text/plain; charset=utf-8').send('method not allowed; POST, or GET with ?wsdl');

  app.get('/soap', (request, reply) => {
    if (!Object.prototype.hasOwnProperty.call(request.query, 'wsdl')) return notAllowed(reply);
    return reply.type(XML_CONTENT_TYPE).send(servedWsdl(request.headers.host));
  });

  app.post('/soap', async (request, reply) => {
    const body = request.body;
    if (typeof body !== 'string' || body.length === 0) return sendFault(reply, 'Client', 'malformed XML: empty body');
    if (hasDoctype(body)) return sendFault(reply, 'Client', 'DTDs are not allowed');
    if (hasMoreElements(body, MAX_ELEMENTS)) return sendFault(reply, 'Client', `too many XML elements: more than ${MAX_ELEMENTS}`);
    let parsed;
    try {
      parsed = wsdl.xmlToObject(body);
    } catch (e) {
      const detail = String((e && e.Fault && e.Fault.detail) || (e && e.message) || '');
      if (/Could not find message|Failed to lookup message/.test(detail)) return sendFault(reply, 'Client', 'unknown body element');
      // sax's parse errors say what is wrong with the XML ("Unclosed root
      // tag\nLine: 0\nColumn: 3\nChar: "); anything else is node-soap
      // failing inside on a document it did not expect (an element named
      // like a JavaScript property, e.g. `constructor`), whose message
      // would name node-soap's code.
      const sax = /^(?:Error: )?([^\n]*)\nLine: \d+\nColumn: \d+/.exec(detail);
      if (sax) return sendFault(reply, 'Client', `malformed XML: ${sax[1].slice(0, 200)}`);
      return sendFault(reply, 'Client', 'malformed SOAP request: unexpected element structure');
    }
    const soapBody = parsed && parsed.Body;
    if (!soapBody || typeof soapBody !== 'object') return sendFault(reply, 'Client', 'not a SOAP 1.1 envelope with a Body');
    const names = Object.keys(soapBody).filter((k) => k !== 'attributes');
    if (names.length !== 1) return sendFault(reply, 'Client', 'the Body must hold exactly one element');
    const target = byElement.get(names[0]);
    if (!target) return sendFault(reply, 'Client', 'unknown body element');
    // (a failed check throws an ApiError; the error handler makes the fault)
    const req = decodeXmlObject(target.request, soapBody[names[0]], names[0]);
    const res = await service.invoke(target.op, req);
    const out = wsdl.objectToDocumentXML(target.outputName, prepareForXml(target.response, res), target.nsAlias, target.ns);
    return reply.type(XML_CONTENT_TYPE).send(envelope(out));
  });

  // Known path, other methods: 405 before the body is read.
  app.route({
    method: app.supportedMethods.filter((m) => m !== 'GET' && m !== 'POST' && m !== 'HEAD'),
    url: '/soap',
    onRequest: (_request, reply) => { notAllowed(reply); },
    handler: () => {},
  });
  return app;
}
