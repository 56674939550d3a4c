package soap

import (
	"context"
	"strings"
	"testing"

	"protobench.dev/servers/go/internal/core"
	"protobench.dev/servers/go/internal/model"
)

func newServer(t *testing.T) *server {
	c := &core.Core{Config: &core.Config{MaxRequestBytes: 1 << 20}, Files: map[string][]byte{}}
	s := &server{core: c, ops: map[string]operation{}}
	register(s.ops, "Echo", c.Echo)
	return s
}

func TestDirectivesRefused(t *testing.T) {
	s := newServer(t)
	for _, doc := range []string{
		`<!DOCTYPE x [<!ENTITY e "expanded">]><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>&e;</payload></EchoRequest></soap:Body></soap:Envelope>`,
		`<?xml version="1.0"?><!DOCTYPE x SYSTEM "file:///etc/passwd"><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest></soap:Body></soap:Envelope>`,
		`<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest></soap:Body></soap:Envelope><!DOCTYPE x>`,
	} {
		_, _, err := s.dispatch(context.Background(), []byte(doc))
		if core.KindOf(err) != core.Invalid || !strings.Contains(err.Error(), "DTD") {
			t.Errorf("%.40s...: got %v, want a DTD refusal", doc, err)
		}
	}
}

func TestDispatch(t *testing.T) {
	s := newServer(t)
	resp, name, err := s.dispatch(context.Background(), []byte(`<?xml version="1.0"?>
<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Header/><s:Body>
  <p:EchoRequest xmlns:p="urn:protobench:v1"><p:payload>a&amp;b&#233;</p:payload></p:EchoRequest>
</s:Body></s:Envelope>
`))
	if err != nil || name != "EchoResponse" {
		t.Fatalf("got %v %v", name, err)
	}
	if m, ok := resp.(*model.EchoMessage); !ok || m.Payload != "a&bé" {
		t.Errorf("got %#v", resp)
	}
}

// internals are words that would show our code rather than the input's
// problem in a fault: Go package or function names, Go types.
var internals = []string{"strconv", "Parse", "xml:", "encoding/", "Decoder", "CharsetReader", "Go ", ".go", "struct", "model."}

func TestFaultsNameTheProblem(t *testing.T) {
	s := newServer(t)
	register(s.ops, "SayHello", s.core.SayHello)
	register(s.ops, "CloneText", s.core.CloneText)
	env := func(body string) string {
		return `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>` + body + `</soap:Body></soap:Envelope>`
	}
	for _, tc := range []struct{ doc, want string }{
		{env(`<CloneTextRequest xmlns="urn:protobench:v1"><text>a</text><times>abc</times></CloneTextRequest>`), `invalid value "abc": want an integer`},
		{env(`<CloneTextRequest xmlns="urn:protobench:v1"><text>a</text><times>99999999999</times></CloneTextRequest>`), `invalid value "99999999999": out of range`},
		{env(`<SayHelloRequest xmlns="urn:protobench:v1"><request><b>yes</b></request></SayHelloRequest>`), `invalid value "yes": want true or false`},
		{env(`<SayHelloRequest xmlns="urn:protobench:v1"><request><d>1..2</d></request></SayHelloRequest>`), `invalid value "1..2": want a number`},
		{env(`<SayHelloRequest xmlns="urn:protobench:v1"><request><pets><color>PINK</color></pets></request></SayHelloRequest>`), `invalid helloworld.Hello.Pet.Color value "PINK"`},
		{`<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>x`, `malformed XML: line 1: unexpected end of input`},
		{env(`<EchoRequest xmlns="urn:protobench:v1"><payload>&foo;</payload></EchoRequest>`), `malformed XML: line 1: invalid character entity &foo;`},
		{`<?xml version="1.0" encoding="latin1"?>` + env(``), `unsupported XML encoding: only UTF-8 is accepted`},
		{env(`<EchoRequest xmlns="urn:protobench:v1">` + strings.Repeat("<a/>", 10000) + `</EchoRequest>`), `too many XML elements: more than 10000`},
	} {
		_, _, err := s.dispatch(context.Background(), []byte(tc.doc))
		if core.KindOf(err) != core.Invalid || err.Error() != tc.want {
			t.Errorf("%.60s...: got %v, want %q", tc.doc[max(0, len(tc.doc)-60):], err, tc.want)
			continue
		}
		for _, w := range internals {
			if strings.Contains(err.Error(), w) {
				t.Errorf("fault %q names %q", err, w)
			}
		}
	}
}

func TestElementLimitCountsTheWholeEnvelope(t *testing.T) {
	s := newServer(t)
	// Header elements count too: 4 in the Header + Envelope, Header, Body,
	// EchoRequest, payload = 9, and the rest up to the limit.
	doc := func(n int) string {
		return `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Header>` + strings.Repeat("<h/>", n-5) +
			`</soap:Header><soap:Body><EchoRequest xmlns="urn:protobench:v1"><payload>x</payload></EchoRequest></soap:Body></soap:Envelope>`
	}
	if _, _, err := s.dispatch(context.Background(), []byte(doc(MaxElements))); err != nil {
		t.Errorf("%d elements: %v", MaxElements, err)
	}
	if _, _, err := s.dispatch(context.Background(), []byte(doc(MaxElements+1))); err != errTooManyElements {
		t.Errorf("%d elements: got %v, want %v", MaxElements+1, err, errTooManyElements)
	}
}
