// Command check is the client side of test.sh: it sends the contract's
// vectors and the inputs only this stack is checked on to a running
// protobench server and checks the answers (bad HTTP, JSON, XML and gRPC
// input and the contract's error statuses are the cross-stack probe's,
// contract/tests/probe.sh go). It prints one line per check ("ok ..." or "FAIL ...") and a
// last line "check: N passed, M failed"; it exits 1 on any failure.
//
// It is a test tool, not part of the server binary.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"protobench.dev/servers/go/internal/core"
	_ "protobench.dev/servers/go/internal/gen/helloworld"
	_ "protobench.dev/servers/go/internal/gen/protobenchv1"
)

const (
	envNS  = "http://schemas.xmlsoap.org/soap/envelope/"
	soapNS = "urn:protobench:v1"
)

var (
	restAddr   = flag.String("rest", "", "rest address")
	restH2Addr = flag.String("rest-h2", "", "rest-h2 address")
	grpcAddr   = flag.String("grpc", "", "grpc address")
	soapAddr   = flag.String("soap", "", "soap address")
	useTLS     = flag.Bool("tls", false, "connect with TLS (certificate not verified)")
	contract   = flag.String("contract", "../../contract", "contract directory")
	mode       = flag.String("mode", "vectors", "vectors | bad | limit | failure | sleep | spin")
	limit      = flag.Int64("limit", 0, "the server's PROTOBENCH_MAX_REQUEST_BYTES (mode limit)")
	rate       = flag.Float64("rate", 0.2, "the server's PROTOBENCH_FAILURE_RATE (mode failure)")
	seed       = flag.Uint64("seed", 1, "the server's PROTOBENCH_FAILURE_SEED (mode failure)")
	calls      = flag.Int("calls", 1000, "calls per protocol (mode failure)")
	minTime    = flag.Duration("min", 50*time.Millisecond, "the server's service time (modes sleep, spin)")
)

var passed, failed int

func ok(name string) { passed++; fmt.Println("ok  ", name) }

func fail(name, format string, args ...any) {
	failed++
	msg := fmt.Sprintf(format, args...)
	if len(msg) > 400 {
		msg = msg[:400] + "..."
	}
	fmt.Printf("FAIL %s: %s\n", name, msg)
}

func check(name string, good bool, format string, args ...any) {
	if good {
		ok(name)
	} else {
		fail(name, format, args...)
	}
}

type workload struct {
	Name       string `json:"name"`
	Operation  string `json:"operation"`
	RestMethod string `json:"restMethod"`
	RestPath   string `json:"restPath"`
	GRPCPath   string `json:"grpcPath"`
	SOAPAction string `json:"soapAction"`
}

func main() {
	flag.Parse()
	h1Client, h2Client = httpClient(false), httpClient(true)
	switch *mode {
	case "vectors":
		vectors()
	case "bad":
		bad()
	case "limit":
		limits()
	case "failure":
		failures()
	case "sleep", "spin":
		serviceTime()
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", *mode)
		os.Exit(2)
	}
	fmt.Printf("check: %d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

// ---------------------------------------------------------------- clients

func scheme() string {
	if *useTLS {
		return "https"
	}
	return "http"
}

func httpClient(h2 bool) *http.Client {
	t := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		Protocols:          new(http.Protocols),
		DisableCompression: true,
		MaxIdleConns:       16,
		IdleConnTimeout:    10 * time.Second,
	}
	switch {
	case !h2:
		t.Protocols.SetHTTP1(true)
	case *useTLS:
		t.Protocols.SetHTTP2(true)
	default:
		t.Protocols.SetUnencryptedHTTP2(true)
	}
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}

// The clients depend on -tls, so they are made after flag.Parse.
var h1Client, h2Client *http.Client

type restTarget struct {
	proto  string
	addr   string
	client *http.Client
}

func restTargets() []restTarget {
	var ts []restTarget
	if *restAddr != "" {
		ts = append(ts, restTarget{"rest", *restAddr, h1Client})
	}
	if *restH2Addr != "" {
		ts = append(ts, restTarget{"rest-h2", *restH2Addr, h2Client})
	}
	return ts
}

type httpResult struct {
	status int
	header http.Header
	body   []byte
	proto  int
	err    error
}

func (t restTarget) do(method, path, contentType string, body []byte, hdr ...string) httpResult {
	return doHTTP(t.client, method, scheme()+"://"+t.addr+path, contentType, body, hdr...)
}

func doHTTP(c *http.Client, method, url, contentType string, body []byte, hdr ...string) httpResult {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return httpResult{err: err}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return httpResult{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return httpResult{status: resp.StatusCode, header: resp.Header, body: b, proto: resp.ProtoMajor, err: err}
}

func soapCall(action string, body []byte, contentType string) httpResult {
	hdr := []string{}
	if action != "" {
		hdr = append(hdr, "SOAPAction", `"`+action+`"`)
	}
	return doHTTP(h1Client, "POST", scheme()+"://"+*soapAddr+"/soap", contentType, body, hdr...)
}

var grpcConn *grpc.ClientConn

func grpcClient() *grpc.ClientConn {
	if grpcConn != nil {
		return grpcConn
	}
	creds := insecure.NewCredentials()
	if *useTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	}
	var err error
	grpcConn, err = grpc.NewClient(*grpcAddr,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpc client:", err)
		os.Exit(2)
	}
	return grpcConn
}

// rawCodec sends and receives bare message bytes, so a test can send bytes
// that are not a valid message.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

func grpcRaw(path string, req []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var resp []byte
	err := grpcClient().Invoke(ctx, path, &req, &resp, grpc.ForceCodec(rawCodec{}))
	return resp, err
}

// messageTypes returns the request and response types of a gRPC path.
func messageTypes(path string) (protoreflect.MessageType, protoreflect.MessageType, error) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(parts[0]))
	if err != nil {
		return nil, nil, err
	}
	m := d.(protoreflect.ServiceDescriptor).Methods().ByName(protoreflect.Name(parts[1]))
	in, err := protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName())
	if err != nil {
		return nil, nil, err
	}
	out, err := protoregistry.GlobalTypes.FindMessageByName(m.Output().FullName())
	return in, out, err
}

// ---------------------------------------------------------------- vectors

func loadWorkloads() []workload {
	b, err := os.ReadFile(filepath.Join(*contract, "workloads.json"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var ws []workload
	if err := json.Unmarshal(b, &ws); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return ws
}

func vectorFile(w, name string) []byte {
	b, err := os.ReadFile(filepath.Join(*contract, "vectors", w, name))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return b
}

func vectors() {
	ws := loadWorkloads()
	// Every workload directory must be covered by workloads.json.
	dirs, _ := os.ReadDir(filepath.Join(*contract, "vectors"))
	known := map[string]bool{}
	for _, w := range ws {
		known[w.Name] = true
	}
	for _, d := range dirs {
		check("vectors/"+d.Name()+" is a known workload", known[d.Name()], "not in workloads.json")
	}
	for _, w := range ws {
		for _, t := range restTargets() {
			name := fmt.Sprintf("%s %s", t.proto, w.Name)
			var body []byte
			ct := ""
			if w.RestMethod != "GET" {
				body, ct = vectorFile(w.Name, "request.json"), "application/json"
			}
			r := t.do(w.RestMethod, w.RestPath, ct, body)
			if r.err != nil {
				fail(name, "%v", r.err)
				continue
			}
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
				fail(name, "status %d, Content-Type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
				continue
			}
			if t.proto == "rest-h2" && r.proto != 2 {
				fail(name, "answered over HTTP/%d", r.proto)
				continue
			}
			if err := jsonEqual(r.body, vectorFile(w.Name, "response.json")); err != nil {
				fail(name, "%v", err)
				continue
			}
			ok(name)
		}
		if *grpcAddr != "" {
			name := "grpc " + w.Name
			in, out, err := messageTypes(w.GRPCPath)
			if err != nil {
				fail(name, "%v", err)
				continue
			}
			req := in.New().Interface()
			if err := proto.Unmarshal(vectorFile(w.Name, "request.pb"), req); err != nil {
				fail(name, "request.pb: %v", err)
				continue
			}
			got := out.New().Interface()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = grpcClient().Invoke(ctx, w.GRPCPath, req, got)
			cancel()
			if err != nil {
				fail(name, "%v", err)
				continue
			}
			want := out.New().Interface()
			if err := proto.Unmarshal(vectorFile(w.Name, "response.pb"), want); err != nil {
				fail(name, "response.pb: %v", err)
				continue
			}
			check(name, proto.Equal(got, want), "response differs from response.pb")
		}
		if *soapAddr != "" {
			name := "soap " + w.Name
			r := soapCall(w.SOAPAction, vectorFile(w.Name, "request.xml"), "text/xml; charset=utf-8")
			if r.err != nil {
				fail(name, "%v", r.err)
				continue
			}
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/xml") {
				fail(name, "status %d, Content-Type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
				continue
			}
			if err := xmlEqual(r.body, vectorFile(w.Name, "response.xml")); err != nil {
				fail(name, "%v", err)
				continue
			}
			ok(name)
		}
	}
}

// jsonEqual compares two JSON documents as values: a null member is the same
// as an absent one, numbers are compared by value.
func jsonEqual(got, want []byte) error {
	g, err := decodeJSON(got)
	if err != nil {
		return fmt.Errorf("response is not JSON: %v", err)
	}
	w, err := decodeJSON(want)
	if err != nil {
		return fmt.Errorf("vector is not JSON: %v", err)
	}
	return valueEqual("$", g, w)
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

func valueEqual(path string, g, w any) error {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %T, want an object", path, g)
		}
		for k, x := range wv {
			if x == nil {
				if y, ok := gv[k]; ok && y != nil {
					return fmt.Errorf("%s.%s: got %v, want absent", path, k, y)
				}
				continue
			}
			y, ok := gv[k]
			if !ok || y == nil {
				return fmt.Errorf("%s.%s: missing", path, k)
			}
			if err := valueEqual(path+"."+k, y, x); err != nil {
				return err
			}
		}
		for k, y := range gv {
			if _, ok := wv[k]; !ok && y != nil {
				return fmt.Errorf("%s.%s: unexpected member", path, k)
			}
		}
		return nil
	case []any:
		gv, ok := g.([]any)
		if !ok {
			return fmt.Errorf("%s: got %T, want an array", path, g)
		}
		if len(gv) != len(wv) {
			return fmt.Errorf("%s: got %d elements, want %d", path, len(gv), len(wv))
		}
		for i := range wv {
			if err := valueEqual(fmt.Sprintf("%s[%d]", path, i), gv[i], wv[i]); err != nil {
				return err
			}
		}
		return nil
	case json.Number:
		gv, ok := g.(json.Number)
		if !ok {
			return fmt.Errorf("%s: got %T %v, want the number %s", path, g, g, wv)
		}
		a, ok1 := new(big.Rat).SetString(gv.String())
		b, ok2 := new(big.Rat).SetString(wv.String())
		if !ok1 || !ok2 || a.Cmp(b) != 0 {
			return fmt.Errorf("%s: got %s, want %s", path, gv, wv)
		}
		return nil
	default:
		if g != w {
			return fmt.Errorf("%s: got %v, want %v", path, short(g), short(w))
		}
		return nil
	}
}

func short(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}

// node is an XML element: its expanded name, text and child elements.
type node struct {
	name     xml.Name
	text     string
	children []*node
}

func parseXML(b []byte) (*node, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	var stack []*node
	var root *node
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else if root != nil {
				return nil, fmt.Errorf("two root elements")
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(t)
			}
		case xml.Directive:
			return nil, fmt.Errorf("directive in a response")
		}
	}
	if root == nil {
		return nil, fmt.Errorf("no root element")
	}
	return root, nil
}

func xmlEqual(got, want []byte) error {
	g, err := parseXML(got)
	if err != nil {
		return fmt.Errorf("response is not XML: %v", err)
	}
	w, err := parseXML(want)
	if err != nil {
		return fmt.Errorf("vector is not XML: %v", err)
	}
	return nodeEqual("", g, w)
}

func nodeEqual(path string, g, w *node) error {
	path += "/" + w.name.Local
	if g.name != w.name {
		return fmt.Errorf("%s: got element {%s}%s, want {%s}%s", path, g.name.Space, g.name.Local, w.name.Space, w.name.Local)
	}
	if len(w.children) > 0 || len(g.children) > 0 {
		if len(g.children) != len(w.children) {
			return fmt.Errorf("%s: got %d child elements, want %d", path, len(g.children), len(w.children))
		}
		for i := range w.children {
			if err := nodeEqual(path, g.children[i], w.children[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if g.text == w.text {
		return nil
	}
	// Numbers are compared by value.
	a, err1 := strconv.ParseFloat(strings.TrimSpace(g.text), 64)
	b, err2 := strconv.ParseFloat(strings.TrimSpace(w.text), 64)
	if err1 == nil && err2 == nil && a == b {
		return nil
	}
	return fmt.Errorf("%s: got %q, want %q", path, short(g.text), short(w.text))
}

// ---------------------------------------------------------------- bad input

func restErr(name string, r httpResult, status int) {
	if r.err != nil {
		fail(name, "%v", r.err)
		return
	}
	var e struct {
		Code    *int    `json:"code"`
		Message *string `json:"message"`
	}
	err := json.Unmarshal(r.body, &e)
	check(name, r.status == status && err == nil && e.Code != nil && *e.Code == status && e.Message != nil &&
		strings.HasPrefix(r.header.Get("Content-Type"), "application/json"),
		"want %d with a JSON error, got %d %q", status, r.status, r.body)
}

// fault parses a SOAP fault, returning its faultcode (prefix resolved) and
// faultstring.
func fault(b []byte) (code xml.Name, msg string, err error) {
	var env struct {
		Body struct {
			Fault *struct {
				Code   string `xml:"faultcode"`
				String string `xml:"faultstring"`
			} `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault"`
		} `xml:"http://schemas.xmlsoap.org/soap/envelope/ Body"`
	}
	if err := xml.Unmarshal(b, &env); err != nil {
		return code, "", err
	}
	if env.Body.Fault == nil {
		return code, "", fmt.Errorf("no Fault")
	}
	// The faultcode prefix is the envelope's (soap) in this server's faults.
	prefix, local, _ := strings.Cut(env.Body.Fault.Code, ":")
	if prefix == "soap" && bytes.Contains(b, []byte(`xmlns:soap="`+envNS+`"`)) {
		code = xml.Name{Space: envNS, Local: local}
	} else {
		code = xml.Name{Local: env.Body.Fault.Code}
	}
	return code, env.Body.Fault.String, nil
}

func soapFault(name string, r httpResult, status int, kind string) {
	if r.err != nil {
		fail(name, "%v", r.err)
		return
	}
	code, _, err := fault(r.body)
	check(name, r.status == status && err == nil && code == xml.Name{Space: envNS, Local: kind},
		"want %d soap:%s fault, got %d %v %q", status, kind, r.status, err, r.body)
}

func envelope(inner string) []byte {
	return []byte(`<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="` + envNS + `"><soap:Body>` + inner + `</soap:Body></soap:Envelope>`)
}

func grpcCode(name, path string, req []byte, want codes.Code) {
	_, err := grpcRaw(path, req)
	check(name, status.Code(err) == want, "want %v, got %v", want, err)
}

// bad checks what the cross-stack probe (contract/tests/probe.py: json, xml,
// grpc and errors phases) does not: values that must be accepted, and the
// XML this decoder must refuse that not every stack refuses.
func bad() {
	for _, t := range restTargets() {
		p := t.proto + " "
		restErr(p+"int32 out of range -> 400", t.do("POST", "/v1/tasks/clone", "application/json", []byte(`{"text":"a","times":4294967296}`)), 400)
		r := t.do("GET", "/v1/echo", "", nil)
		check(p+"405 Allow POST", r.status == 405 && r.header.Get("Allow") == "POST", "got %d, Allow %q", r.status, r.header.Get("Allow"))
		r = t.do("POST", "/v1/echo", "application/json; charset=utf-8", []byte(`{"payload":"x"}`))
		check(p+"charset parameter accepted", r.status == 200, "got %d %q", r.status, r.body)
		r = t.do("POST", "/v1/greeter/hello", "application/json", []byte(`{"request":{"l":"-9223372036854775808","pets":[{"color":2}]}}`))
		check(p+"int64 string and numeric enum accepted", r.status == 200 && jsonEqual(r.body, []byte(`{"response":{"name":"","d":0,"f":0,"b":false,"n":0,"l":"-9223372036854775808","pets":[{"name":"","color":"BLUE"}]}}`)) == nil, "got %d %s", r.status, r.body)
		r = t.do("POST", "/v1/products/modify", "application/json", []byte(`{"description":"añ😀b"}`))
		check(p+"modify reverses by scalar values, fills defaults", r.status == 200 && jsonEqual(r.body, []byte(`{"id":0,"name":"","description":"b😀ña","price":0,"stock":0,"tags":[]}`)) == nil, "got %d %s", r.status, r.body)
	}
	if *soapAddr != "" {
		xmlCT := "text/xml; charset=utf-8"
		soapFault("soap wrong body namespace -> Client fault", soapCall("", envelope(`<EchoRequest xmlns="urn:other"><payload>x</payload></EchoRequest>`), xmlCT), 500, "Client")
		soapFault("soap content after the Envelope -> Client fault", soapCall("", append(envelope(`<EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest>`), "<x/>"...), xmlCT), 500, "Client")
		soapFault("soap two body elements -> Client fault", soapCall("", envelope(`<EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest><EchoRequest xmlns="urn:protobench:v1"/>`), xmlCT), 500, "Client")
		soapFault("soap non-UTF-8 encoding -> Client fault", soapCall("", []byte(`<?xml version="1.0" encoding="ISO-8859-1"?><soap:Envelope xmlns:soap="`+envNS+`"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest></soap:Body></soap:Envelope>`), xmlCT), 500, "Client")
		r := soapCall("", envelope(`<EchoRequest xmlns="urn:protobench:v1"><payload>a &amp; b</payload></EchoRequest>`), "text/xml")
		check("soap no SOAPAction, no charset accepted", r.status == 200 && xmlEqual(r.body, envelope(`<EchoResponse xmlns="urn:protobench:v1"><payload>a &amp; b</payload></EchoResponse>`)) == nil, "got %d %s", r.status, r.body)
		r = soapCall("", []byte(`<?xml version="1.0"?><!-- hi --><e:Envelope xmlns:e="`+envNS+`"><e:Header><x xmlns="urn:x">y</x></e:Header><e:Body><p:ModifyProductRequest xmlns:p="urn:protobench:v1"><p:description>añ😀b</p:description><p:tags>t</p:tags></p:ModifyProductRequest></e:Body></e:Envelope>`), "text/xml")
		check("soap other prefixes, Header, defaults", r.status == 200 && xmlEqual(r.body, envelope(`<ModifyProductResponse xmlns="urn:protobench:v1"><id>0</id><name></name><description>b😀ña</description><price>0</price><stock>0</stock><tags>t</tags></ModifyProductResponse>`)) == nil, "got %d %s", r.status, r.body)
	}
	if *grpcAddr != "" {
		grpcCode("grpc garbage to Greeter -> INVALID_ARGUMENT", "/helloworld.Greeter/SayHello", []byte{0x0a, 0x05, 0x01}, codes.InvalidArgument)
		resp, err := grpcRaw("/protobench.v1.Bench/ModifyProduct", []byte("\x1a\x07a\xc3\xb1\xf0\x9f\x98\x80"))
		check("grpc modify reverses by scalar values", err == nil && string(resp) == "\x1a\x07\xf0\x9f\x98\x80\xc3\xb1a", "got %q %v", resp, err)
	}
}

// ---------------------------------------------------------------- limits

// limits checks what the probe's limit phase (at the default 8 MiB) does not:
// a DOCTYPE body over the limit gets 413, not a DTD fault (no parsing happens).
func limits() {
	if *soapAddr != "" {
		n := int(*limit)
		body := append([]byte(`<!DOCTYPE x>`), envelope(`<EchoRequest xmlns="urn:protobench:v1"><payload>`+strings.Repeat("x", 2*n)+`</payload></EchoRequest>`)...)
		r := soapCall("", body, "text/xml")
		check("soap oversized DOCTYPE body -> 413 before parsing", r.status == 413, "got %d", r.status)
	}
}

// ---------------------------------------------------------------- failures

// failures sends *calls requests per protocol, one at a time, so the
// server's counter k runs 0, 1, 2, ... in this order, and compares the
// failures with the splitmix64 draw exactly.
func failures() {
	k := uint64(0)
	expect := func() int {
		n := 0
		for i := 0; i < *calls; i++ {
			if core.Fails(*seed, k, *rate) {
				n++
			}
			k++
		}
		return n
	}
	within := func(n int) bool {
		want := *rate * float64(*calls)
		return float64(n) >= want-0.2*want && float64(n) <= want+0.2*want
	}
	for _, t := range restTargets() {
		want, got, bad := expect(), 0, 0
		for i := 0; i < *calls; i++ {
			r := t.do("GET", "/v1/tasks/integer", "", nil)
			switch {
			case r.status == 200:
			case r.status == 500 && jsonEqual(r.body, []byte(`{"code":500,"message":"injected failure"}`)) == nil:
				got++
			default:
				bad++
			}
		}
		check(fmt.Sprintf("%s %d calls at rate %g: %d injected failures (splitmix64: %d)", t.proto, *calls, *rate, got, want),
			got == want && bad == 0 && within(got), "other answers: %d", bad)
	}
	if *grpcAddr != "" {
		want, got, bad := expect(), 0, 0
		for i := 0; i < *calls; i++ {
			_, err := grpcRaw("/protobench.v1.Bench/GetInteger", nil)
			s, _ := status.FromError(err)
			switch {
			case err == nil:
			case s.Code() == codes.Unavailable && s.Message() == "injected failure":
				got++
			default:
				bad++
			}
		}
		check(fmt.Sprintf("grpc %d calls at rate %g: %d injected failures (splitmix64: %d)", *calls, *rate, got, want),
			got == want && bad == 0 && within(got), "other answers: %d", bad)
	}
	if *soapAddr != "" {
		want, got, bad := expect(), 0, 0
		body := envelope(`<GetIntegerRequest xmlns="urn:protobench:v1"/>`)
		for i := 0; i < *calls; i++ {
			r := soapCall("urn:protobench:v1#GetInteger", body, "text/xml; charset=utf-8")
			code, msg, _ := fault(r.body)
			switch {
			case r.status == 200:
			case r.status == 500 && code == xml.Name{Space: envNS, Local: "Server"} && msg == "injected failure":
				got++
			default:
				bad++
			}
		}
		check(fmt.Sprintf("soap %d calls at rate %g: %d injected failures (splitmix64: %d)", *calls, *rate, got, want),
			got == want && bad == 0 && within(got), "other answers: %d", bad)
	}
}

// ---------------------------------------------------------------- service time

func serviceTime() {
	type target struct {
		name string
		call func() error
	}
	var ts []target
	for _, t := range restTargets() {
		ts = append(ts, target{t.proto, func() error {
			r := t.do("GET", "/v1/tasks/integer", "", nil)
			if r.err != nil || r.status != 200 {
				return fmt.Errorf("status %d %v", r.status, r.err)
			}
			return nil
		}})
	}
	if *grpcAddr != "" {
		ts = append(ts, target{"grpc", func() error { _, err := grpcRaw("/protobench.v1.Bench/GetInteger", nil); return err }})
	}
	if *soapAddr != "" {
		ts = append(ts, target{"soap", func() error {
			r := soapCall("", envelope(`<GetIntegerRequest xmlns="urn:protobench:v1"/>`), "text/xml")
			if r.err != nil || r.status != 200 {
				return fmt.Errorf("status %d %v", r.status, r.err)
			}
			return nil
		}})
	}
	for _, t := range ts {
		t.call() // warm the connection
		start := time.Now()
		err := t.call()
		d := time.Since(start)
		check(fmt.Sprintf("%s %s:%v call took %v", t.name, *mode, *minTime, d.Round(time.Millisecond)), err == nil && d >= *minTime, "err %v", err)
		if *mode == "sleep" {
			// Sleeping must not block other requests: 8 concurrent calls
			// finish in far less than 8 service times.
			const n = 8
			var wg sync.WaitGroup
			errs := make(chan error, n)
			start = time.Now()
			for range n {
				wg.Go(func() {
					if err := t.call(); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			d = time.Since(start)
			close(errs)
			check(fmt.Sprintf("%s %d concurrent sleeping calls took %v", t.name, n, d.Round(time.Millisecond)),
				len(errs) == 0 && d < n**minTime/2, "errors %d", len(errs))
		}
	}
}
