package core

import (
	"context"

	"protobench.dev/servers/go/internal/model"
)

// The operations on the model types, shared by the REST and SOAP front ends.
// Each validates its request, then calls Admit (service time and failure
// draw), then builds the response, which the caller encodes.

func (c *Core) GetInventoryXs(ctx context.Context, _ *model.Empty) (*model.Empty, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return &model.Empty{}, nil
}

func (c *Core) GetInventoryS(ctx context.Context, _ *model.Empty) (*model.InventoryStatus, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return &c.Data.InventoryStatus, nil
}

func (c *Core) GetInventoryM(ctx context.Context, _ *model.Empty) (*model.DeviceList, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return &model.DeviceList{Devices: c.Data.Devices}, nil
}

func (c *Core) GetInventoryL(ctx context.Context, _ *model.Empty) (*model.ItemList, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return &model.ItemList{Items: c.Data.Items}, nil
}

func (c *Core) EchoProduct(ctx context.Context, p *model.Product) (*model.Product, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	p.Normalize()
	return p, nil
}

func (c *Core) ModifyProduct(ctx context.Context, p *model.Product) (*model.Product, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	p.Description = Reverse(p.Description)
	p.Normalize()
	return p, nil
}

func (c *Core) CloneText(ctx context.Context, r *model.CloneRequest) (*model.CloneResponse, error) {
	if err := ValidateClone(r.Text, r.Times); err != nil {
		return nil, err
	}
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return &model.CloneResponse{Texts: Clone(r.Text, r.Times)}, nil
}

func (c *Core) GetInteger(ctx context.Context, _ *model.Empty) (*model.IntegerValue, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return &model.IntegerValue{Value: 2147483647}, nil
}

func (c *Core) GetIntegers(ctx context.Context, _ *model.Empty) (*model.IntegerList, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return &model.IntegerList{Values: c.Integers}, nil
}

func (c *Core) GetObjects(ctx context.Context, _ *model.Empty) (*model.ObjectList, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return &model.ObjectList{People: c.Data.People}, nil
}

func (c *Core) GetFile(ctx context.Context, r *model.FileRequest) (*model.FileContent, error) {
	content, err := c.File(r.Name)
	if err != nil {
		return nil, err
	}
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return &model.FileContent{Name: r.Name, Content: content}, nil
}

func (c *Core) Echo(ctx context.Context, m *model.EchoMessage) (*model.EchoMessage, error) {
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

func (c *Core) SayHello(ctx context.Context, r *model.HelloRequest) (*model.HelloReply, error) {
	if h := r.Request; h != nil && h.C1 != nil && h.C2 != nil {
		return nil, invalid("at most one of c1 and c2 (oneof choice) may be set")
	}
	if err := c.Admit(ctx); err != nil {
		return nil, err
	}
	r.Request.Normalize()
	return &model.HelloReply{Response: r.Request}, nil
}
