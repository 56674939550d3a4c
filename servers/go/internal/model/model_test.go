package model

import (
	"encoding/json"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"protobench.dev/servers/go/internal/gen/helloworld"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
)

// TestMatchesProto checks every model struct against its message in the
// generated descriptors: the same fields in field-number order, the JSON and
// XML names equal to the fields' JSON names, optional fields and oneof
// members as pointers with omitempty, repeated fields as slices, int64 with
// `,string`.
func TestMatchesProto(t *testing.T) {
	cases := []struct {
		model any
		desc  protoreflect.MessageDescriptor
	}{
		{Empty{}, (&pb.Empty{}).ProtoReflect().Descriptor()},
		{InventoryStatus{}, (&pb.InventoryStatus{}).ProtoReflect().Descriptor()},
		{Device{}, (&pb.Device{}).ProtoReflect().Descriptor()},
		{DeviceList{}, (&pb.DeviceList{}).ProtoReflect().Descriptor()},
		{Location{}, (&pb.Location{}).ProtoReflect().Descriptor()},
		{Item{}, (&pb.Item{}).ProtoReflect().Descriptor()},
		{ItemList{}, (&pb.ItemList{}).ProtoReflect().Descriptor()},
		{Product{}, (&pb.Product{}).ProtoReflect().Descriptor()},
		{CloneRequest{}, (&pb.CloneRequest{}).ProtoReflect().Descriptor()},
		{CloneResponse{}, (&pb.CloneResponse{}).ProtoReflect().Descriptor()},
		{IntegerValue{}, (&pb.IntegerValue{}).ProtoReflect().Descriptor()},
		{IntegerList{}, (&pb.IntegerList{}).ProtoReflect().Descriptor()},
		{Person{}, (&pb.Person{}).ProtoReflect().Descriptor()},
		{ObjectList{}, (&pb.ObjectList{}).ProtoReflect().Descriptor()},
		{FileRequest{}, (&pb.FileRequest{}).ProtoReflect().Descriptor()},
		{FileContent{}, (&pb.FileContent{}).ProtoReflect().Descriptor()},
		{EchoMessage{}, (&pb.EchoMessage{}).ProtoReflect().Descriptor()},
		{Hello{}, (&helloworld.Hello{}).ProtoReflect().Descriptor()},
		{Pet{}, (&helloworld.Hello_Pet{}).ProtoReflect().Descriptor()},
		{HelloRequest{}, (&helloworld.HelloRequest{}).ProtoReflect().Descriptor()},
		{HelloReply{}, (&helloworld.HelloReply{}).ProtoReflect().Descriptor()},
	}
	for _, c := range cases {
		typ := reflect.TypeOf(c.model)
		fields := c.desc.Fields()
		if typ.NumField() != fields.Len() {
			t.Errorf("%s: %d fields, %s has %d", typ.Name(), typ.NumField(), c.desc.FullName(), fields.Len())
			continue
		}
		// Field-number order.
		ordered := make([]protoreflect.FieldDescriptor, 0, fields.Len())
		for i := 0; i < fields.Len(); i++ {
			ordered = append(ordered, fields.Get(i))
		}
		for i := 1; i < len(ordered); i++ {
			for j := i; j > 0 && ordered[j].Number() < ordered[j-1].Number(); j-- {
				ordered[j], ordered[j-1] = ordered[j-1], ordered[j]
			}
		}
		for i, fd := range ordered {
			sf := typ.Field(i)
			jsonTag := strings.Split(sf.Tag.Get("json"), ",")
			xmlTag := strings.Split(sf.Tag.Get("xml"), ",")
			name := typ.Name() + "." + sf.Name
			if jsonTag[0] != fd.JSONName() || xmlTag[0] != fd.JSONName() {
				t.Errorf("%s: tags %q %q, want %q", name, jsonTag[0], xmlTag[0], fd.JSONName())
			}
			optional := fd.HasPresence() && fd.Message() == nil
			hasOmit := contains(jsonTag[1:], "omitempty")
			if fd.Message() != nil && !fd.IsList() {
				// A singular message field: a value (always present) or a
				// pointer omitted when unset.
				optional = sf.Type.Kind() == reflect.Pointer
			}
			if optional != hasOmit || optional != contains(xmlTag[1:], "omitempty") {
				t.Errorf("%s: omitempty %v, want %v", name, hasOmit, optional)
			}
			if optional && sf.Type.Kind() != reflect.Pointer {
				t.Errorf("%s: optional field is not a pointer", name)
			}
			if fd.IsList() != (sf.Type.Kind() == reflect.Slice && sf.Type.Elem().Kind() != reflect.Uint8) {
				t.Errorf("%s: repeated %v but Go type %s", name, fd.IsList(), sf.Type)
			}
			if (fd.Kind() == protoreflect.Int64Kind) != contains(jsonTag[1:], "string") {
				t.Errorf("%s: int64 must be (only) ,string", name)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestJSONDefaultsAndOptional(t *testing.T) {
	b, _ := json.Marshal(Item{})
	want := `{"id":"","name":"","category":"ITEM_CATEGORY_UNSPECIFIED","unitPrice":0,"weightKg":0,"quantity":0,"inStock":false,"fragile":false,"location":{"warehouse":"","aisle":0,"shelf":0,"bin":""}}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	d := "x"
	h := &Hello{L: 444325235223, C1: &d}
	h.Normalize()
	b, _ = json.Marshal(h)
	want = `{"name":"","d":0,"f":0,"b":false,"n":0,"l":"444325235223","c1":"x","pets":[]}`
	if string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(FileContent{Name: "f", Content: []byte{0, 1, 2, 255}})
	if string(b) != `{"name":"f","content":"AAEC/w=="}` {
		t.Errorf("got %s", b)
	}
}

func TestXML(t *testing.T) {
	var sb strings.Builder
	enc := xml.NewEncoder(&sb)
	err := enc.EncodeElement(FileContent{Name: "f", Content: []byte{0, 1, 2, 255}}, xml.StartElement{Name: xml.Name{Space: "urn:protobench:v1", Local: "R"}})
	enc.Close()
	b := sb.String()
	if err != nil || b != `<R xmlns="urn:protobench:v1"><name>f</name><content>AAEC/w==</content></R>` {
		t.Errorf("got %s %v", b, err)
	}
	var p Pet
	if err := xml.Unmarshal([]byte(`<p><name>a</name><color>GREEN</color></p>`), &p); err != nil || p.Color != 5 {
		t.Errorf("got %+v %v", p, err)
	}
	if err := xml.Unmarshal([]byte(`<p><color>PURPLE</color></p>`), &p); err == nil {
		t.Error("unknown enum name accepted")
	}
}

func TestEnumJSON(t *testing.T) {
	var p Pet
	for _, in := range []string{`{"color":"RED"}`, `{"color":3}`} {
		if err := json.Unmarshal([]byte(in), &p); err != nil || p.Color != 3 {
			t.Errorf("%s: got %v %v", in, p.Color, err)
		}
	}
	for _, in := range []string{`{"color":"PURPLE"}`, `{"color":6}`, `{"color":-1}`, `{"color":1.5}`, `{"color":true}`} {
		if err := json.Unmarshal([]byte(in), &p); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
	b, _ := json.Marshal(Device{State: 3})
	if string(b) != `{"deviceId":"","state":"DEVICE_STATE_MAINTENANCE","readingCount":0}` {
		t.Errorf("got %s", b)
	}
}
