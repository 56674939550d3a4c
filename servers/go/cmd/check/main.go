// Command check is the client side of test.sh: it sends a running
// protobench server the inputs only this stack is checked on (edge values it
// must accept, XML its decoder must refuse that not every stack refuses, a
// DOCTYPE body over the size limit). Every workload on every protocol, clear
// and TLS, is `protobench verify`'s with zeep and ghz
// (scripts/verify-servers.sh); bad HTTP, JSON, XML and gRPC input, the
// contract's error statuses, the server limits, TLS, the failure draw and the
// service time are the cross-stack probe's (contract/tests/probe.sh go). It
// prints one line per check ("ok ..." or "FAIL ...") and a last line
// "check: N passed, M failed"; it exits 1 on any failure.
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
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
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
	mode       = flag.String("mode", "bad", "bad | limit")
	limit      = flag.Int64("limit", 0, "the server's PROTOBENCH_MAX_REQUEST_BYTES (mode limit)")
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

func main() {
	flag.Parse()
	h1Client, h2Client = httpClient(false), httpClient(true)
	switch *mode {
	case "bad":
		bad()
	case "limit":
		limits()
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

// sameJSON reports whether got is the JSON document want (as values).
func sameJSON(got []byte, want string) bool {
	var g, w any
	return json.Unmarshal(got, &g) == nil && json.Unmarshal([]byte(want), &w) == nil && reflect.DeepEqual(g, w)
}

// xmlItems lists an XML document's elements (expanded names) and non-blank
// texts in order, so that two documents compare whatever their prefixes.
func xmlItems(b []byte) []string {
	var items []string
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if err != nil {
			return append(items, fmt.Sprint("end: ", err))
		}
		switch t := tok.(type) {
		case xml.StartElement:
			items = append(items, "<{"+t.Name.Space+"}"+t.Name.Local)
		case xml.EndElement:
			items = append(items, ">")
		case xml.CharData:
			if text := strings.TrimSpace(string(t)); text != "" {
				items = append(items, text)
			}
		}
	}
}

// sameXML reports whether got has want's elements and texts.
func sameXML(got, want []byte) bool { return slices.Equal(xmlItems(got), xmlItems(want)) }

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
		r := t.do("POST", "/v1/echo", "application/json; charset=utf-8", []byte(`{"payload":"x"}`))
		check(p+"charset parameter accepted", r.status == 200, "got %d %q", r.status, r.body)
		r = t.do("POST", "/v1/greeter/hello", "application/json", []byte(`{"request":{"l":"-9223372036854775808","pets":[{"color":2}]}}`))
		check(p+"int64 string and numeric enum accepted", r.status == 200 && sameJSON(r.body, `{"response":{"name":"","d":0,"f":0,"b":false,"n":0,"l":"-9223372036854775808","pets":[{"name":"","color":"BLUE"}]}}`), "got %d %s", r.status, r.body)
		r = t.do("POST", "/v1/products/modify", "application/json", []byte(`{"description":"añ😀b"}`))
		check(p+"modify reverses by scalar values, fills defaults", r.status == 200 && sameJSON(r.body, `{"id":0,"name":"","description":"b😀ña","price":0,"stock":0,"tags":[]}`), "got %d %s", r.status, r.body)
	}
	if *soapAddr != "" {
		xmlCT := "text/xml; charset=utf-8"
		soapFault("soap wrong body namespace -> Client fault", soapCall("", envelope(`<EchoRequest xmlns="urn:other"><payload>x</payload></EchoRequest>`), xmlCT), 500, "Client")
		soapFault("soap content after the Envelope -> Client fault", soapCall("", append(envelope(`<EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest>`), "<x/>"...), xmlCT), 500, "Client")
		soapFault("soap two body elements -> Client fault", soapCall("", envelope(`<EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest><EchoRequest xmlns="urn:protobench:v1"/>`), xmlCT), 500, "Client")
		soapFault("soap non-UTF-8 encoding -> Client fault", soapCall("", []byte(`<?xml version="1.0" encoding="ISO-8859-1"?><soap:Envelope xmlns:soap="`+envNS+`"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest></soap:Body></soap:Envelope>`), xmlCT), 500, "Client")
		r := soapCall("", envelope(`<EchoRequest xmlns="urn:protobench:v1"><payload>a &amp; b</payload></EchoRequest>`), "text/xml")
		check("soap no SOAPAction, no charset accepted", r.status == 200 && sameXML(r.body, envelope(`<EchoResponse xmlns="urn:protobench:v1"><payload>a &amp; b</payload></EchoResponse>`)), "got %d %s", r.status, r.body)
		r = soapCall("", []byte(`<?xml version="1.0"?><!-- hi --><e:Envelope xmlns:e="`+envNS+`"><e:Header><x xmlns="urn:x">y</x></e:Header><e:Body><p:ModifyProductRequest xmlns:p="urn:protobench:v1"><p:description>añ😀b</p:description><p:tags>t</p:tags></p:ModifyProductRequest></e:Body></e:Envelope>`), "text/xml")
		check("soap other prefixes, Header, defaults", r.status == 200 && sameXML(r.body, envelope(`<ModifyProductResponse xmlns="urn:protobench:v1"><id>0</id><name></name><description>b😀ña</description><price>0</price><stock>0</stock><tags>t</tags></ModifyProductResponse>`)), "got %d %s", r.status, r.body)
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
