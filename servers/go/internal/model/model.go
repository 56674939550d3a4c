// Package model holds the contract's messages as plain Go structs for the
// REST (encoding/json) and SOAP (encoding/xml) forms. The struct tags follow
// contract/README.md: lowerCamelCase member and element names, every
// non-optional field always emitted, optional fields and oneof members as
// pointers that are omitted when unset, int64 as a JSON string, enums by
// name, bytes as standard base64.
//
// Fields are declared in field-number order, which is the element order the
// SOAP form requires. The SOAP body element (<Op>Request / <Op>Response) is
// supplied by the caller, so these types carry no XMLName.
package model

// Empty is protobench.v1.Empty.
type Empty struct{}

// InventoryStatus is protobench.v1.InventoryStatus.
type InventoryStatus struct {
	ServiceName           string   `json:"serviceName" xml:"serviceName"`
	RegionCode            string   `json:"regionCode" xml:"regionCode"`
	StatusMessage         string   `json:"statusMessage" xml:"statusMessage"`
	RecentErrors          []string `json:"recentErrors" xml:"recentErrors"`
	CPUUtilization        float64  `json:"cpuUtilization" xml:"cpuUtilization"`
	MemoryUtilization     float64  `json:"memoryUtilization" xml:"memoryUtilization"`
	AverageResponseMillis float64  `json:"averageResponseMillis" xml:"averageResponseMillis"`
	ActiveDeviceCount     int32    `json:"activeDeviceCount" xml:"activeDeviceCount"`
}

// Device is protobench.v1.Device.
type Device struct {
	DeviceID     string      `json:"deviceId" xml:"deviceId"`
	State        DeviceState `json:"state" xml:"state"`
	ReadingCount int32       `json:"readingCount" xml:"readingCount"`
}

// DeviceList is protobench.v1.DeviceList.
type DeviceList struct {
	Devices []Device `json:"devices" xml:"devices"`
}

// Location is protobench.v1.Location.
type Location struct {
	Warehouse string `json:"warehouse" xml:"warehouse"`
	Aisle     int32  `json:"aisle" xml:"aisle"`
	Shelf     int32  `json:"shelf" xml:"shelf"`
	Bin       string `json:"bin" xml:"bin"`
}

// Item is protobench.v1.Item. Location is a message field that the contract
// data always sets (the OpenAPI and XSD forms require it), so it is a value.
type Item struct {
	ID          string       `json:"id" xml:"id"`
	Name        string       `json:"name" xml:"name"`
	Category    ItemCategory `json:"category" xml:"category"`
	UnitPrice   float64      `json:"unitPrice" xml:"unitPrice"`
	WeightKg    float32      `json:"weightKg" xml:"weightKg"`
	Quantity    int32        `json:"quantity" xml:"quantity"`
	InStock     bool         `json:"inStock" xml:"inStock"`
	Fragile     bool         `json:"fragile" xml:"fragile"`
	Location    Location     `json:"location" xml:"location"`
	Description *string      `json:"description,omitempty" xml:"description,omitempty"`
	Supplier    *string      `json:"supplier,omitempty" xml:"supplier,omitempty"`
}

// ItemList is protobench.v1.ItemList.
type ItemList struct {
	Items []Item `json:"items" xml:"items"`
}

// Product is protobench.v1.Product.
type Product struct {
	ID          int32    `json:"id" xml:"id"`
	Name        string   `json:"name" xml:"name"`
	Description string   `json:"description" xml:"description"`
	Price       float64  `json:"price" xml:"price"`
	Stock       int32    `json:"stock" xml:"stock"`
	Tags        []string `json:"tags" xml:"tags"`
}

// Normalize makes the repeated fields non-nil so they encode as [] in JSON.
func (p *Product) Normalize() {
	if p.Tags == nil {
		p.Tags = []string{}
	}
}

// CloneRequest is protobench.v1.CloneRequest.
type CloneRequest struct {
	Text  string `json:"text" xml:"text"`
	Times int32  `json:"times" xml:"times"`
}

// CloneResponse is protobench.v1.CloneResponse.
type CloneResponse struct {
	Texts []string `json:"texts" xml:"texts"`
}

// IntegerValue is protobench.v1.IntegerValue.
type IntegerValue struct {
	Value int32 `json:"value" xml:"value"`
}

// IntegerList is protobench.v1.IntegerList.
type IntegerList struct {
	Values []int32 `json:"values" xml:"values"`
}

// Person is protobench.v1.Person.
type Person struct {
	ID        int32   `json:"id" xml:"id"`
	FirstName string  `json:"firstName" xml:"firstName"`
	LastName  string  `json:"lastName" xml:"lastName"`
	Email     string  `json:"email" xml:"email"`
	Age       int32   `json:"age" xml:"age"`
	Active    bool    `json:"active" xml:"active"`
	Balance   float64 `json:"balance" xml:"balance"`
}

// ObjectList is protobench.v1.ObjectList.
type ObjectList struct {
	People []Person `json:"people" xml:"people"`
}

// FileRequest is protobench.v1.FileRequest.
type FileRequest struct {
	Name string `json:"name" xml:"name"`
}

// FileContent is protobench.v1.FileContent.
type FileContent struct {
	Name    string `json:"name" xml:"name"`
	Content []byte `json:"content" xml:"content"`
}

// EchoMessage is protobench.v1.EchoMessage.
type EchoMessage struct {
	Payload string `json:"payload" xml:"payload"`
}

// Hello is helloworld.Hello (grpc_bench's complex_proto shape). C1 and C2
// are the members of the oneof `choice`.
type Hello struct {
	Name string  `json:"name" xml:"name"`
	D    float64 `json:"d" xml:"d"`
	F    float32 `json:"f" xml:"f"`
	B    bool    `json:"b" xml:"b"`
	N    int32   `json:"n" xml:"n"`
	L    int64   `json:"l,string" xml:"l"`
	C1   *string `json:"c1,omitempty" xml:"c1,omitempty"`
	C2   *bool   `json:"c2,omitempty" xml:"c2,omitempty"`
	Pets []Pet   `json:"pets" xml:"pets"`
}

// Normalize makes the repeated fields non-nil so they encode as [] in JSON.
func (h *Hello) Normalize() {
	if h != nil && h.Pets == nil {
		h.Pets = []Pet{}
	}
}

// Pet is helloworld.Hello.Pet.
type Pet struct {
	Name  string   `json:"name" xml:"name"`
	Color PetColor `json:"color" xml:"color"`
}

// HelloRequest is helloworld.HelloRequest.
type HelloRequest struct {
	Request *Hello `json:"request,omitempty" xml:"request,omitempty"`
}

// HelloReply is helloworld.HelloReply.
type HelloReply struct {
	Response *Hello `json:"response,omitempty" xml:"response,omitempty"`
}
