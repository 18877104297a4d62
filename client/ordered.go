package client

import (
	"context"
	"fmt"
	"strconv"

	"github.com/caskade/caskade/resp"
)

// KeyValue is a key and its value. In results of range reads both slices
// are the caller's; Value is nil for key-only reads.
type KeyValue struct {
	Key   []byte
	Value []byte
}

// KeySelector names a key by its position relative to another, as
// FoundationDB's key selectors (and caskade.KeySelector) do: find the last
// key < Key (<= Key if OrEqual), then move Offset keys forward (backward if
// negative). Offset 1 therefore means the first key after that one.
// Resolution clamps at the ends of the key space: the start is the empty
// key, past the end is nil.
type KeySelector struct {
	Key     []byte
	OrEqual bool
	Offset  int
}

// FirstGreaterOrEqual selects the first key >= key.
func FirstGreaterOrEqual(key []byte) KeySelector { return KeySelector{Key: key, Offset: 1} }

// FirstGreaterThan selects the first key > key.
func FirstGreaterThan(key []byte) KeySelector {
	return KeySelector{Key: key, OrEqual: true, Offset: 1}
}

// LastLessOrEqual selects the last key <= key.
func LastLessOrEqual(key []byte) KeySelector { return KeySelector{Key: key, OrEqual: true} }

// LastLessThan selects the last key < key.
func LastLessThan(key []byte) KeySelector { return KeySelector{Key: key} }

// Add returns the selector moved by n more keys.
func (s KeySelector) Add(n int) KeySelector {
	s.Offset += n
	return s
}

// String formats the selector as FoundationDB's bindings do.
func (s KeySelector) String() string {
	return fmt.Sprintf("KeySelector(%q, %v, %d)", s.Key, s.OrEqual, s.Offset)
}

// RangeOptions modify a range read. The zero value reads every pair in
// ascending order.
type RangeOptions struct {
	// Limit caps the number of pairs returned; 0 means no limit. A
	// negative limit is sent as it is, and the server refuses it
	// (caskade: "ERR value is out of range, must be positive").
	Limit int
	// Reverse returns pairs in descending key order (the Limit pairs
	// nearest the end of the range).
	Reverse bool
	// KeysOnly returns keys without values.
	KeysOnly bool
}

// RangeArgs select the pairs with From <= key < To. A nil From or To leaves
// that side open.
type RangeArgs struct {
	From, To []byte
	Limit    int
	Reverse  bool
	KeysOnly bool
}

// AtomicOp is an atomic operation of CSK.ATOMIC, applied by the server
// to a key's value with a parameter, as FoundationDB's atomic mutations.
type AtomicOp string

// The atomic operations (see caskade.Tx for their semantics).
const (
	AtomicAdd             AtomicOp = "ADD"             // little-endian integer addition, wrapping
	AtomicAnd             AtomicOp = "AND"             // bitwise and
	AtomicOr              AtomicOp = "OR"              // bitwise or
	AtomicXor             AtomicOp = "XOR"             // bitwise exclusive or
	AtomicMax             AtomicOp = "MAX"             // larger, as little-endian unsigned integers
	AtomicMin             AtomicOp = "MIN"             // smaller, as little-endian unsigned integers
	AtomicByteMax         AtomicOp = "BYTEMAX"         // lexicographically larger
	AtomicByteMin         AtomicOp = "BYTEMIN"         // lexicographically smaller
	AtomicAppendIfFits    AtomicOp = "APPENDIFFITS"    // append unless the value would grow too large
	AtomicCompareAndClear AtomicOp = "COMPAREANDCLEAR" // clear if the value equals the parameter
)

// Command builders. prefix is nil, or "CSK.SNAPSHOT" for snapshot reads in
// a transaction.

func rangeOptArgs(args [][]byte, o RangeOptions) [][]byte {
	if o.Limit != 0 {
		args = append(args, []byte("LIMIT"), strconv.AppendInt(nil, int64(o.Limit), 10))
	}
	if o.Reverse {
		args = append(args, []byte("REV"))
	}
	if o.KeysOnly {
		args = append(args, []byte("KEYSONLY"))
	}
	return args
}

func appendRange(b []byte, prefix []byte, a RangeArgs) []byte {
	args := make([][]byte, 0, 12)
	if prefix != nil {
		args = append(args, prefix)
	}
	args = append(args, []byte("CSK.RANGE"))
	if len(a.From) > 0 {
		args = append(args, []byte("FROM"), a.From)
	}
	if a.To != nil {
		args = append(args, []byte("TO"), a.To)
	}
	args = rangeOptArgs(args, RangeOptions{Limit: a.Limit, Reverse: a.Reverse, KeysOnly: a.KeysOnly})
	return resp.AppendCommand(b, args...)
}

func selArgs(args [][]byte, s KeySelector) [][]byte {
	key := s.Key
	if key == nil {
		key = emptyBytes
	}
	eq := []byte("0")
	if s.OrEqual {
		eq = []byte("1")
	}
	return append(args, key, eq, strconv.AppendInt(nil, int64(s.Offset), 10))
}

func appendRangeSel(b []byte, prefix []byte, begin, end KeySelector, o RangeOptions) []byte {
	args := make([][]byte, 0, 14)
	if prefix != nil {
		args = append(args, prefix)
	}
	args = append(args, []byte("CSK.RANGESEL"))
	args = selArgs(args, begin)
	args = selArgs(args, end)
	args = rangeOptArgs(args, o)
	return resp.AppendCommand(b, args...)
}

func appendGetKey(b []byte, prefix []byte, s KeySelector) []byte {
	args := make([][]byte, 0, 5)
	if prefix != nil {
		args = append(args, prefix)
	}
	args = append(args, []byte("CSK.GETKEY"))
	args = selArgs(args, s)
	return resp.AppendCommand(b, args...)
}

func appendClearRange(b []byte, begin, end []byte) []byte {
	args := [][]byte{[]byte("CSK.CLEARRANGE")}
	if len(begin) > 0 {
		args = append(args, []byte("FROM"), begin)
	}
	if end != nil {
		args = append(args, []byte("TO"), end)
	}
	return resp.AppendCommand(b, args...)
}

func appendAtomic(b []byte, op AtomicOp, key, param []byte) []byte {
	b = resp.AppendArrayHeader(b, 4)
	b = resp.AppendBulkString(b, "CSK.ATOMIC")
	b = resp.AppendBulkString(b, string(op))
	b = resp.AppendBulk(b, key)
	return resp.AppendBulk(b, param)
}

// Reply converters.

// kvResult converts a CSK.RANGE or CSK.RANGESEL reply; the pairs share the
// Value's memory, which is the caller's.
func kvResult(v Value, keysOnly bool) ([]KeyValue, error) {
	elems, err := v.Array()
	if err != nil {
		return nil, err
	}
	step := 2
	if keysOnly {
		step = 1
	}
	if len(elems)%step != 0 {
		return nil, fmt.Errorf("%w: range reply of %d elements", ErrUnexpectedReply, len(elems))
	}
	out := make([]KeyValue, len(elems)/step)
	for i := range out {
		if out[i].Key, err = elems[i*step].Bytes(); err != nil {
			return nil, err
		}
		if !keysOnly {
			if out[i].Value, err = elems[i*step+1].Bytes(); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// keyResult converts a CSK.GETKEY reply: nil past the end.
func keyResult(v Value) ([]byte, error) {
	if v.IsNil() {
		return nil, nil
	}
	return v.Bytes()
}

// runBytes runs an encoded command on a shared connection.
func (c *Client) runBytes(ctx context.Context, cls class, build func([]byte) []byte) (result, error) {
	r := c.getRequest()
	r.cmd = build(r.cmd[:0])
	r.cls = cls
	return c.exec(ctx, r)
}

// Range returns the pairs with a.From <= key < a.To (CSK.RANGE), in key
// order or, with a.Reverse, in reverse order; at most a.Limit of them if it
// is positive. The slices are the caller's.
func (c *Client) Range(ctx context.Context, a RangeArgs) ([]KeyValue, error) {
	res, err := c.runBytes(ctx, classRead, func(b []byte) []byte { return appendRange(b, nil, a) })
	if err != nil {
		return nil, err
	}
	return kvResult(res.val, a.KeysOnly)
}

// RangeSelect returns the pairs from the key begin resolves to (inclusive)
// to the key end resolves to (exclusive) (CSK.RANGESEL). The slices are
// the caller's.
func (c *Client) RangeSelect(ctx context.Context, begin, end KeySelector, o RangeOptions) ([]KeyValue, error) {
	res, err := c.runBytes(ctx, classRead, func(b []byte) []byte { return appendRangeSel(b, nil, begin, end, o) })
	if err != nil {
		return nil, err
	}
	return kvResult(res.val, o.KeysOnly)
}

// GetKey resolves a key selector (CSK.GETKEY). It returns the key, the
// empty key if the selector clamps at the start of the key space, and nil
// (with a nil error) if it lands past the end. The slice is the caller's.
func (c *Client) GetKey(ctx context.Context, sel KeySelector) ([]byte, error) {
	res, err := c.runBytes(ctx, classRead, func(b []byte) []byte { return appendGetKey(b, nil, sel) })
	if err != nil {
		return nil, err
	}
	return keyResult(res.val)
}

// ClearRange removes every key with begin <= key < end (CSK.CLEARRANGE); a
// nil begin or end leaves that side open.
func (c *Client) ClearRange(ctx context.Context, begin, end []byte) error {
	_, err := c.runBytes(ctx, classWrite, func(b []byte) []byte { return appendClearRange(b, begin, end) })
	return err
}

// Atomic applies an atomic operation to key's value with param
// (CSK.ATOMIC).
func (c *Client) Atomic(ctx context.Context, op AtomicOp, key, param []byte) error {
	_, err := c.runBytes(ctx, classWrite, func(b []byte) []byte { return appendAtomic(b, op, key, param) })
	return err
}

// Version returns the commit version of key's current value (CSK.VERSION).
func (c *Client) Version(ctx context.Context, key []byte) (uint64, error) {
	res, err := c.runBytes(ctx, classRead, func(b []byte) []byte {
		return resp.AppendCommand(b, []byte("CSK.VERSION"), key)
	})
	n, err := intResult(res, err)
	return uint64(n), err
}
