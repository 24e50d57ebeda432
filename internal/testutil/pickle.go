package testutil

import "encoding/binary"

// Pickle builds a pickle byte stream (protocol 2) opcode by opcode, independent of the code under
// test; B is the stream so far.
type Pickle struct{ B []byte }

// Op appends raw opcodes (and their arguments).
func (p *Pickle) Op(b ...byte) *Pickle { p.B = append(p.B, b...); return p }

// Global appends GLOBAL module.name.
func (p *Pickle) Global(module, name string) *Pickle {
	return p.Op('c').Op([]byte(module + "\n" + name + "\n")...)
}

// Str appends BINUNICODE s.
func (p *Pickle) Str(s string) *Pickle {
	p.Op('X')
	p.B = binary.LittleEndian.AppendUint32(p.B, uint32(len(s)))
	return p.Op([]byte(s)...)
}

// Int appends BININT v (a 32-bit signed integer).
func (p *Pickle) Int(v int) *Pickle {
	p.Op('J')
	p.B = binary.LittleEndian.AppendUint32(p.B, uint32(int32(v)))
	return p
}

// Ints appends the tuple of vs (MARK, BININTs, TUPLE).
func (p *Pickle) Ints(vs ...int) *Pickle {
	p.Op('(')
	for _, v := range vs {
		p.Int(v)
	}
	return p.Op('t')
}

// Tensor appends torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False,
// OrderedDict()) as torch.save writes it, the storage a persistent id (class, key, numel).
func (p *Pickle) Tensor(class, key string, numel, offset int, size, stride []int) *Pickle {
	p.Global("torch._utils", "_rebuild_tensor_v2").Op('(')
	p.Op('(').Str("storage").Global("torch", class).Str(key).Str("cpu").Int(numel).Op('t', 'Q')
	p.Int(offset).Ints(size...).Ints(stride...).Op(0x89)
	p.Global("collections", "OrderedDict").Op(')', 'R')
	return p.Op('t', 'R')
}
