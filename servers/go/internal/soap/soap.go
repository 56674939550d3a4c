// Package soap is the SOAP 1.1 document/literal front end: net/http and
// encoding/xml with the model structs.
package soap

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"

	"protobench.dev/servers/go/internal/core"
)

const (
	// EnvelopeNS is the SOAP 1.1 envelope namespace.
	EnvelopeNS = "http://schemas.xmlsoap.org/soap/envelope/"
	// NS is the namespace of every body element.
	NS = "urn:protobench:v1"
)

type server struct {
	core  *core.Core
	limit int64
	ops   map[string]operation // by request element local name
	// The WSDL split around the soap:address location value, which is
	// rewritten to the request's Host.
	wsdlHead, wsdlTail string
}

// operation decodes a body element into its request type and returns the
// call that runs the operation on it.
type operation func(d *xml.Decoder, start *xml.StartElement) (call, error)

// call runs a decoded operation: its response and the response element name.
type call func(ctx context.Context) (resp any, name string, err error)

func register[Req, Resp any](ops map[string]operation, name string, fn func(context.Context, *Req) (*Resp, error)) {
	respName := name + "Response"
	ops[name+"Request"] = func(d *xml.Decoder, start *xml.StartElement) (call, error) {
		req := new(Req)
		if err := d.DecodeElement(req, start); err != nil {
			return nil, clientError(err)
		}
		return func(ctx context.Context) (any, string, error) {
			resp, err := fn(ctx, req)
			return resp, respName, err
		}, nil
	}
}

var locationRE = regexp.MustCompile(`(<soap:address\s+location=")[^"]*(")`)

// Handler returns the SOAP handler: POST /soap and GET /soap?wsdl.
func Handler(c *core.Core) (http.Handler, error) {
	wsdl, err := os.ReadFile(c.Config.WSDLPath)
	if err != nil {
		return nil, fmt.Errorf("read WSDL: %w", err)
	}
	loc := locationRE.FindSubmatchIndex(wsdl)
	if loc == nil {
		return nil, fmt.Errorf("%s: no soap:address location", c.Config.WSDLPath)
	}
	s := &server{
		core:     c,
		limit:    c.Config.MaxRequestBytes,
		ops:      map[string]operation{},
		wsdlHead: string(wsdl[:loc[3]]),
		wsdlTail: string(wsdl[loc[4]:]),
	}
	register(s.ops, "GetInventoryXs", c.GetInventoryXs)
	register(s.ops, "GetInventoryS", c.GetInventoryS)
	register(s.ops, "GetInventoryM", c.GetInventoryM)
	register(s.ops, "GetInventoryL", c.GetInventoryL)
	register(s.ops, "EchoProduct", c.EchoProduct)
	register(s.ops, "ModifyProduct", c.ModifyProduct)
	register(s.ops, "CloneText", c.CloneText)
	register(s.ops, "GetInteger", c.GetInteger)
	register(s.ops, "GetIntegers", c.GetIntegers)
	register(s.ops, "GetObjects", c.GetObjects)
	register(s.ops, "GetFile", c.GetFile)
	register(s.ops, "Echo", c.Echo)
	register(s.ops, "SayHello", c.SayHello)
	return s, nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/soap" {
		http.Error(w, "404 not found: "+r.URL.Path, http.StatusNotFound)
		return
	}
	switch {
	case r.Method == http.MethodPost:
		s.call(w, r)
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && strings.EqualFold(r.URL.RawQuery, "wsdl"):
		s.wsdl(w, r)
	default:
		w.Header().Set("Allow", "POST, GET")
		writeFault(w, http.StatusMethodNotAllowed, "soap:Client", "method "+r.Method+" not allowed: POST to call, GET /soap?wsdl for the WSDL")
	}
}

func (s *server) wsdl(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	var b strings.Builder
	b.WriteString(s.wsdlHead)
	xml.EscapeText(&b, []byte(scheme+"://"+r.Host+"/soap"))
	b.WriteString(s.wsdlTail)
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	io.WriteString(w, b.String())
}

func (s *server) call(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > s.limit {
		writeFault(w, http.StatusRequestEntityTooLarge, "soap:Client", "request body over "+strconv.FormatInt(s.limit, 10)+" bytes")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "text/xml" {
		writeFault(w, http.StatusUnsupportedMediaType, "soap:Client", "Content-Type must be text/xml")
		return
	}
	// The whole body is read first, so that an oversized one is refused with
	// 413 before any parsing, also without a Content-Length.
	// With a Content-Length the buffer is allocated once at that size (plus
	// the room ReadFrom wants to see the end), not grown by doubling.
	buf := bytes.NewBuffer(make([]byte, 0, max(r.ContentLength, 0)+bytes.MinRead))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.limit))
	body := buf.Bytes()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeFault(w, http.StatusRequestEntityTooLarge, "soap:Client", "request body over "+strconv.FormatInt(s.limit, 10)+" bytes")
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			// PROTOBENCH_READ_TIMEOUT expired while the body was being read.
			w.Header().Set("Connection", "close")
			writeFault(w, http.StatusRequestTimeout, "soap:Client", "request not received within the read timeout")
		} else {
			writeFault(w, http.StatusBadRequest, "soap:Client", "could not read the request body")
		}
		return
	}
	resp, name, err := s.dispatch(r.Context(), body)
	if err != nil {
		switch core.KindOf(err) {
		case core.Invalid, core.NotFound:
			writeFault(w, http.StatusInternalServerError, "soap:Client", err.Error())
		case core.Injected:
			writeFault(w, http.StatusInternalServerError, "soap:Server", err.Error())
		default:
			writeFault(w, http.StatusInternalServerError, "soap:Server", "internal error")
		}
		return
	}
	writeResponse(w, resp, name)
}

// dispatch parses the envelope, finds the body element, decodes it into the
// operation's request, runs the operation and checks that the rest of the
// document is well-formed.
func (s *server) dispatch(ctx context.Context, body []byte) (any, string, error) {
	d := newDecoder(bytes.NewReader(body))
	// The root element: soap:Envelope.
	start, err := nextElement(d)
	if err != nil {
		return nil, "", err
	}
	if start == nil || start.Name.Space != EnvelopeNS || start.Name.Local != "Envelope" {
		if start == nil {
			return nil, "", clientErrorf("no root element")
		}
		return nil, "", clientErrorf("the root element must be a SOAP 1.1 Envelope, got {%s}%s", start.Name.Space, start.Name.Local)
	}
	// Envelope children: an optional Header (ignored), then Body.
	for {
		start, err = nextElement(d)
		if err != nil {
			return nil, "", err
		}
		if start == nil {
			return nil, "", clientErrorf("the Envelope has no Body")
		}
		if start.Name.Space == EnvelopeNS && start.Name.Local == "Header" {
			if err := d.Skip(); err != nil {
				return nil, "", clientError(err)
			}
			continue
		}
		if start.Name.Space == EnvelopeNS && start.Name.Local == "Body" {
			break
		}
		return nil, "", clientErrorf("unexpected element {%s}%s in the Envelope", start.Name.Space, start.Name.Local)
	}
	// The one Body child names the operation.
	start, err = nextElement(d)
	if err != nil {
		return nil, "", err
	}
	if start == nil {
		return nil, "", clientErrorf("the Body is empty")
	}
	op, ok := s.ops[start.Name.Local]
	if !ok || start.Name.Space != NS {
		return nil, "", clientErrorf("unknown body element {%s}%s", start.Name.Space, start.Name.Local)
	}
	run, err := op(d, start)
	if err != nil {
		return nil, "", err
	}
	// The whole document must be well-formed before the operation runs: the
	// Body and the Envelope must end here, and only comments, processing
	// instructions and whitespace may follow.
	for _, what := range []string{"Body", "Envelope"} {
		extra, err := nextElement(d)
		if err != nil {
			return nil, "", err
		}
		if extra != nil {
			return nil, "", clientErrorf("unexpected element {%s}%s after the request in the %s", extra.Name.Space, extra.Name.Local, what)
		}
	}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", clientError(err)
		}
		switch t := tok.(type) {
		case xml.Comment, xml.ProcInst:
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return nil, "", clientErrorf("unexpected text after the Envelope")
			}
		default:
			return nil, "", clientErrorf("unexpected content after the Envelope")
		}
	}
	return run(ctx)
}

// nextElement returns the next start element at this level, nil at the end
// of the enclosing element, and an error on anything but whitespace,
// comments and processing instructions in between.
func nextElement(d *xml.Decoder) (*xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil, clientErrorf("unexpected end of the document")
		}
		if err != nil {
			return nil, clientError(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return &t, nil
		case xml.EndElement:
			return nil, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) != 0 {
				return nil, clientErrorf("unexpected text %q", truncate(string(t)))
			}
		case xml.Comment, xml.ProcInst:
		}
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// MaxElements bounds the work one request can cause: a request with more
// XML elements than this (counted over the whole envelope, as they stream
// past) is refused. The largest legitimate request has fewer than 40.
const MaxElements = 10000

var (
	// errDTD is returned for any <!...> directive (DOCTYPE, ENTITY, ...).
	errDTD = &core.Error{Kind: core.Invalid, Msg: "DTDs are not allowed (<!DOCTYPE ...> or another directive found)"}
	// errTooManyElements is returned for the element after MaxElements.
	errTooManyElements = &core.Error{Kind: core.Invalid, Msg: "too many XML elements: more than " + strconv.Itoa(MaxElements)}
)

// guard passes on the raw tokens of d, refusing every directive, so that no
// DTD, and thus no entity declaration, is ever processed (encoding/xml does
// not expand DTD entities anyway; this makes the refusal explicit), and
// counting start elements, so that the request is refused at element
// MaxElements+1. Everything above it (nesting and namespace checks, decoding
// into the request struct, skipping unknown elements) consumes this stream,
// so no element past the limit is ever looked at and no tree is built.
type guard struct {
	d        *xml.Decoder
	elements int
}

func (g *guard) Token() (xml.Token, error) {
	tok, err := g.d.RawToken()
	switch tok.(type) {
	case xml.Directive:
		return nil, errDTD
	case xml.StartElement:
		if g.elements++; g.elements > MaxElements {
			return nil, errTooManyElements
		}
	}
	return tok, err
}

// newDecoder returns a strict decoder over r that refuses directives and
// more than MaxElements elements. The inner decoder tokenizes; the outer one
// checks nesting and resolves namespaces.
func newDecoder(r io.Reader) *xml.Decoder {
	return xml.NewTokenDecoder(&guard{d: xml.NewDecoder(r)})
}

// clientError turns a decoding error into a soap:Client error that says what
// was wrong with the XML, never which Go function found it.
func clientError(err error) error {
	var e *core.Error
	if errors.As(err, &e) {
		return e
	}
	var syntax *xml.SyntaxError
	if errors.As(err, &syntax) {
		msg := syntax.Msg
		if msg == "unexpected EOF" {
			msg = "unexpected end of input"
		}
		return clientErrorf("malformed XML: line %d: %s", syntax.Line, msg)
	}
	var num *strconv.NumError
	if errors.As(err, &num) {
		if errors.Is(num.Err, strconv.ErrRange) {
			return clientErrorf("invalid value %q: out of range", truncate(num.Num))
		}
		want := "a number"
		switch num.Func {
		case "ParseBool":
			want = "true or false"
		case "ParseInt", "ParseUint", "Atoi":
			want = "an integer"
		}
		return clientErrorf("invalid value %q: want %s", truncate(num.Num), want)
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "invalid "):
		// The model types' own errors (enums, base64) name the value.
		return clientErrorf("%s", msg)
	case strings.HasPrefix(msg, "xml: encoding "):
		return clientErrorf("unsupported XML encoding: only UTF-8 is accepted")
	case strings.HasPrefix(msg, "expected element type "):
		return clientErrorf("%s", msg)
	}
	return clientErrorf("malformed XML")
}

func clientErrorf(format string, args ...any) error {
	return &core.Error{Kind: core.Invalid, Msg: fmt.Sprintf(format, args...)}
}

const (
	envelopeOpen  = `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<soap:Envelope xmlns:soap="` + EnvelopeNS + `"><soap:Body>`
	envelopeClose = `</soap:Body></soap:Envelope>`
)

// writeResponse encodes resp as the body element name in the contract
// namespace, inside a SOAP envelope.
func writeResponse(w http.ResponseWriter, resp any, name string) {
	var buf bytes.Buffer
	buf.WriteString(envelopeOpen)
	enc := xml.NewEncoder(&buf)
	err := enc.EncodeElement(resp, xml.StartElement{Name: xml.Name{Space: NS, Local: name}})
	if err == nil {
		err = enc.Close()
	}
	if err != nil {
		writeFault(w, http.StatusInternalServerError, "soap:Server", "response could not be encoded")
		return
	}
	buf.WriteString(envelopeClose)
	write(w, http.StatusOK, &buf)
}

func writeFault(w http.ResponseWriter, status int, code, msg string) {
	var buf bytes.Buffer
	buf.WriteString(envelopeOpen)
	buf.WriteString(`<soap:Fault><faultcode>`)
	buf.WriteString(code)
	buf.WriteString(`</faultcode><faultstring>`)
	xml.EscapeText(&buf, []byte(msg))
	buf.WriteString(`</faultstring></soap:Fault>`)
	buf.WriteString(envelopeClose)
	write(w, status, &buf)
}

func write(w http.ResponseWriter, status int, buf *bytes.Buffer) {
	h := w.Header()
	h.Set("Content-Type", "text/xml; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
