package model

import (
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
)

// DeviceState is protobench.v1.DeviceState, encoded by value name.
type DeviceState int32

var deviceStateNames = []string{
	"DEVICE_STATE_UNSPECIFIED",
	"DEVICE_STATE_ONLINE",
	"DEVICE_STATE_OFFLINE",
	"DEVICE_STATE_MAINTENANCE",
}

func (s DeviceState) MarshalText() ([]byte, error) { return enumName(deviceStateNames, int32(s)) }

func (s *DeviceState) UnmarshalText(b []byte) error {
	v, err := enumValue(deviceStateNames, string(b), "protobench.v1.DeviceState")
	*s = DeviceState(v)
	return err
}

// ItemCategory is protobench.v1.ItemCategory, encoded by value name.
type ItemCategory int32

var itemCategoryNames = []string{
	"ITEM_CATEGORY_UNSPECIFIED",
	"ITEM_CATEGORY_HARDWARE",
	"ITEM_CATEGORY_ELECTRONICS",
	"ITEM_CATEGORY_TOOLS",
	"ITEM_CATEGORY_SUPPLIES",
}

func (c ItemCategory) MarshalText() ([]byte, error) { return enumName(itemCategoryNames, int32(c)) }

func (c *ItemCategory) UnmarshalText(b []byte) error {
	v, err := enumValue(itemCategoryNames, string(b), "protobench.v1.ItemCategory")
	*c = ItemCategory(v)
	return err
}

// PetColor is helloworld.Hello.Pet.Color, encoded by value name.
type PetColor int32

var petColorNames = []string{"BLACK", "WHITE", "BLUE", "RED", "YELLOW", "GREEN"}

func (c PetColor) MarshalText() ([]byte, error) { return enumName(petColorNames, int32(c)) }

// UnmarshalText accepts a value name (the XML form, and JSON strings).
func (c *PetColor) UnmarshalText(b []byte) error {
	v, err := enumValue(petColorNames, string(b), "helloworld.Hello.Pet.Color")
	*c = PetColor(v)
	return err
}

// UnmarshalJSON accepts what proto3's JSON mapping accepts for an enum: the
// value name as a string or the value number; an unknown value is an error.
// null leaves the default.
func (c *PetColor) UnmarshalJSON(b []byte) error {
	s := string(b)
	switch {
	case s == "null":
		return nil
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		name, err := strconv.Unquote(s)
		if err != nil {
			return fmt.Errorf("invalid helloworld.Hello.Pet.Color %s", s)
		}
		return c.UnmarshalText([]byte(name))
	default:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 || n >= int64(len(petColorNames)) {
			return fmt.Errorf("invalid helloworld.Hello.Pet.Color %s", s)
		}
		*c = PetColor(n)
		return nil
	}
}

func enumName(names []string, v int32) ([]byte, error) {
	if v < 0 || int(v) >= len(names) {
		// Unknown numbers never reach here: inputs are checked on decode.
		return []byte(strconv.Itoa(int(v))), nil
	}
	return []byte(names[v]), nil
}

func enumValue(names []string, s, enum string) (int32, error) {
	for i, n := range names {
		if n == s {
			return int32(i), nil
		}
	}
	return 0, fmt.Errorf("invalid %s value %q", enum, s)
}

// Bytes is a protobuf `bytes` field in XML: standard base64 with padding.
// (encoding/json already writes []byte that way, so JSON uses plain []byte.)
type Bytes []byte

func (b Bytes) MarshalText() ([]byte, error) {
	out := make([]byte, base64.StdEncoding.EncodedLen(len(b)))
	base64.StdEncoding.Encode(out, b)
	return out, nil
}

func (b *Bytes) UnmarshalText(text []byte) error {
	out := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(out, text)
	if err != nil {
		return fmt.Errorf("invalid base64")
	}
	*b = out[:n]
	return nil
}

// MarshalXML writes FileContent with its content as base64 text.
func (f FileContent) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return e.EncodeElement(struct {
		Name    string `xml:"name"`
		Content Bytes  `xml:"content"`
	}{f.Name, f.Content}, start)
}

// GraphQL (gqlgen) forms of the enums: the value names.

func (s DeviceState) MarshalGQL(w io.Writer)    { writeGQLEnum(w, deviceStateNames, int32(s)) }
func (s *DeviceState) UnmarshalGQL(v any) error { return unmarshalGQLEnum(v, s.UnmarshalText) }
func (c ItemCategory) MarshalGQL(w io.Writer)   { writeGQLEnum(w, itemCategoryNames, int32(c)) }
func (c *ItemCategory) UnmarshalGQL(v any) error {
	return unmarshalGQLEnum(v, c.UnmarshalText)
}
func (c PetColor) MarshalGQL(w io.Writer)    { writeGQLEnum(w, petColorNames, int32(c)) }
func (c *PetColor) UnmarshalGQL(v any) error { return unmarshalGQLEnum(v, c.UnmarshalText) }

func writeGQLEnum(w io.Writer, names []string, v int32) {
	b, _ := enumName(names, v)
	w.Write(strconv.AppendQuote(nil, string(b)))
}

func unmarshalGQLEnum(v any, set func([]byte) error) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("expected an enum value name, found %v", v)
	}
	return set([]byte(s))
}
