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
